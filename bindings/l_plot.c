/*
** l_plot.c -- C._plot_png(path, width, height, panels): line charts written
** as a PNG file, for training curves (issue 9). No library: the image is
** palette-indexed (8 bits per pixel) and stored in uncompressed deflate
** blocks, with PNG's CRC-32 and zlib's Adler-32 computed here, so any PNG
** reader opens it.
**
** panels: an array of {series = {{values = {...}, color = {r, g, b},
** label = "train"}, ...}, ymin = n, ymax = n, title = "loss"} (the range
** defaults to the data's; labels make a legend), drawn side by side,
** each with a frame, 5 horizontal grid lines labelled with their values, and
** x running over the points (1..n). A series with x = {...} (as many as its
** values) puts its points at those x instead, the panel's x axis then
** spanning the x values (xmin/xmax override); points = true draws each point
** as a dot and joins none (a scatter plot). Everything C allocates lives in a
** userdata, so a Lua error in argument reading leaks nothing.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "l_ember.h"

enum { MAXCOL = 64 };

typedef struct canvas {
  int w, h, ncol;
  unsigned char pal[MAXCOL][3];
  unsigned char px[];  /* w * h palette indices */
} canvas;

static int color(canvas *c, int r, int g, int b) {
  for (int i = 0; i < c->ncol; i++)
    if (c->pal[i][0] == r && c->pal[i][1] == g && c->pal[i][2] == b) return i;
  if (c->ncol == MAXCOL) return 0;
  c->pal[c->ncol][0] = (unsigned char)r;
  c->pal[c->ncol][1] = (unsigned char)g;
  c->pal[c->ncol][2] = (unsigned char)b;
  return c->ncol++;
}

static void dot(canvas *c, int x, int y, int col) {
  if (x >= 0 && y >= 0 && x < c->w && y < c->h) c->px[y * c->w + x] = (unsigned char)col;
}

static void line(canvas *c, double x0, double y0, double x1, double y1, int col, int thick) {
  double dx = x1 - x0, dy = y1 - y0;
  int n = (int)(fmax(fabs(dx), fabs(dy))) + 1;
  for (int i = 0; i <= n; i++) {
    double t = (double)i / n;
    int x = (int)lround(x0 + t * dx), y = (int)lround(y0 + t * dy);
    for (int a = 0; a < thick; a++)
      for (int b = 0; b < thick; b++) dot(c, x + a - thick / 2, y + b - thick / 2, col);
  }
}

/* a 3x5 font (numbers, letters drawn as capitals, a few signs): rows of 3
** bits, top first */
static const unsigned char *glyph(char ch) {
  static const unsigned char digits[10][5] = {
      {7, 5, 5, 5, 7}, {2, 6, 2, 2, 7}, {7, 1, 7, 4, 7}, {7, 1, 7, 1, 7}, {5, 5, 7, 1, 1},
      {7, 4, 7, 1, 7}, {7, 4, 7, 5, 7}, {7, 1, 1, 1, 1}, {7, 5, 7, 5, 7}, {7, 5, 7, 1, 7}};
  static const unsigned char letters[26][5] = {
      {2, 5, 7, 5, 5}, {6, 5, 6, 5, 6}, {3, 4, 4, 4, 3}, {6, 5, 5, 5, 6}, {7, 4, 6, 4, 7},
      {7, 4, 6, 4, 4}, {3, 4, 5, 5, 3}, {5, 5, 7, 5, 5}, {7, 2, 2, 2, 7}, {1, 1, 1, 5, 2},
      {5, 5, 6, 5, 5}, {4, 4, 4, 4, 7}, {5, 7, 5, 5, 5}, {6, 5, 5, 5, 5}, {2, 5, 5, 5, 2},
      {6, 5, 6, 4, 4}, {2, 5, 5, 6, 3}, {6, 5, 6, 5, 5}, {3, 4, 2, 1, 6}, {7, 2, 2, 2, 2},
      {5, 5, 5, 5, 7}, {5, 5, 5, 5, 2}, {5, 5, 7, 7, 5}, {5, 5, 2, 5, 5}, {5, 5, 2, 2, 2},
      {7, 1, 2, 4, 7}};
  static const unsigned char dotg[5] = {0, 0, 0, 0, 2}, minus[5] = {0, 0, 7, 0, 0},
                             pct[5] = {5, 1, 2, 4, 5},
                             colon[5] = {0, 2, 0, 2, 0}, slash[5] = {1, 1, 2, 4, 4},
                             lp[5] = {1, 2, 2, 2, 1}, rp[5] = {4, 2, 2, 2, 4},
                             under[5] = {0, 0, 0, 0, 7}, plus[5] = {0, 2, 7, 2, 0};
  if (ch >= '0' && ch <= '9') return digits[ch - '0'];
  if (ch >= 'a' && ch <= 'z') return letters[ch - 'a'];
  if (ch >= 'A' && ch <= 'Z') return letters[ch - 'A'];
  switch (ch) {
    case '.': return dotg;
    case '-': return minus;
    case '%': return pct;
    case ':': return colon;
    case '/': return slash;
    case '(': return lp;
    case ')': return rp;
    case '_': return under;
    case '+': return plus;
    default: return NULL;
  }
}

static void text(canvas *c, int x, int y, const char *s, int col, int scale) {
  for (; *s; s++, x += 4 * scale) {
    const unsigned char *g = glyph(*s);
    if (!g) continue;
    for (int r = 0; r < 5; r++)
      for (int b = 0; b < 3; b++)
        if (g[r] & (4 >> b))
          for (int i = 0; i < scale; i++)
            for (int j = 0; j < scale; j++) dot(c, x + b * scale + i, y + r * scale + j, col);
  }
}

/* -- PNG ------------------------------------------------------------------- */

static unsigned long crc_table[256];
static void crc_init(void) {
  if (crc_table[1]) return;
  for (unsigned long n = 0; n < 256; n++) {
    unsigned long v = n;
    for (int k = 0; k < 8; k++) v = v & 1 ? 0xedb88320UL ^ (v >> 1) : v >> 1;
    crc_table[n] = v;
  }
}
static unsigned long crc(unsigned long c, const unsigned char *p, size_t n) {
  c ^= 0xffffffffUL;
  for (size_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffUL;
}
static void be32(unsigned char *p, unsigned long v) {
  p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
}
static int chunk(FILE *f, const char *type, const unsigned char *data, size_t n) {
  unsigned char h[8];
  be32(h, (unsigned long)n);
  memcpy(h + 4, type, 4);
  unsigned long c = crc(crc(0, h + 4, 4), data, n);
  unsigned char t[4];
  be32(t, c);
  return fwrite(h, 1, 8, f) == 8 && (n == 0 || fwrite(data, 1, n, f) == n) &&
         fwrite(t, 1, 4, f) == 4;
}

/* the IDAT payload: a zlib stream of stored blocks over the filtered rows */
static int write_png(const char *path, const canvas *c, unsigned char *buf, size_t cap) {
  crc_init();
  size_t raw = (size_t)c->h * (size_t)(c->w + 1), o = 0;
  unsigned long a = 1, b = 0;
  buf[o++] = 0x78;
  buf[o++] = 0x01;
  size_t done = 0;
  while (done < raw || raw == 0) {
    size_t n = raw - done > 65535 ? 65535 : raw - done;
    buf[o++] = done + n == raw ? 1 : 0;
    buf[o++] = (unsigned char)(n & 0xff); buf[o++] = (unsigned char)(n >> 8);
    buf[o++] = (unsigned char)(~n & 0xff); buf[o++] = (unsigned char)((~n >> 8) & 0xff);
    for (size_t i = 0; i < n; i++) {
      size_t k = done + i, row = k / (size_t)(c->w + 1), col = k % (size_t)(c->w + 1);
      unsigned char v = col == 0 ? 0 : c->px[row * (size_t)c->w + col - 1];
      buf[o++] = v;
      a = (a + v) % 65521;
      b = (b + a) % 65521;
    }
    done += n;
    if (raw == 0) break;
  }
  be32(buf + o, (b << 16) | a);
  o += 4;
  if (o > cap) return 0;
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  static const unsigned char sig[8] = {137, 80, 78, 71, 13, 10, 26, 10};
  unsigned char ihdr[13];
  be32(ihdr, (unsigned long)c->w);
  be32(ihdr + 4, (unsigned long)c->h);
  ihdr[8] = 8; ihdr[9] = 3; ihdr[10] = 0; ihdr[11] = 0; ihdr[12] = 0;
  int ok = fwrite(sig, 1, 8, f) == 8 && chunk(f, "IHDR", ihdr, 13) &&
           chunk(f, "PLTE", &c->pal[0][0], (size_t)c->ncol * 3) && chunk(f, "IDAT", buf, o) &&
           chunk(f, "IEND", NULL, 0);
  return fclose(f) == 0 && ok;
}

/* -- drawing --------------------------------------------------------------- */

static double num_field(lua_State *L, int idx, const char *k, double def) {
  lua_getfield(L, idx, k);
  double v = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : def;
  lua_pop(L, 1);
  return v;
}

static void fmt_tick(char *s, size_t n, double v, double span) {
  span /= 4; /* the step between grid lines */
  if (fabs(v) < span * 1e-6) v = 0; /* no "-0" */
  if (span >= 10) snprintf(s, n, "%.0f", v);
  else if (span >= 1) snprintf(s, n, "%.1f", v);
  else if (span >= 0.1) snprintf(s, n, "%.2f", v);
  else snprintf(s, n, "%.3f", v);
}

/* the finite min/max of the numbers in the array at stack idx */
static void span_of(lua_State *L, int idx, double *lo, double *hi) {
  int n = (int)lua_objlen(L, idx);
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, idx, i);
    double v = lua_tonumber(L, -1);
    lua_pop(L, 1);
    if (isfinite(v)) { *lo = fmin(*lo, v); *hi = fmax(*hi, v); }
  }
}

/* the panel at stack idx drawn into [x0, x0 + pw) x [0, h) */
static void panel(lua_State *L, int idx, canvas *c, int x0, int pw, const char *op) {
  int bg = color(c, 255, 255, 255), fg = color(c, 40, 40, 40), grid = color(c, 225, 225, 225);
  (void)bg;
  lua_getfield(L, idx, "series");
  if (!lua_istable(L, -1)) l_errorf(L, "%s: each panel needs a series table", op);
  int ser = lua_gettop(L), ns = (int)lua_objlen(L, ser);
  double lo = INFINITY, hi = -INFINITY, xlo = INFINITY, xhi = -INFINITY;
  int npts = 1, has_x = 0;
  for (int s = 1; s <= ns; s++) {
    lua_rawgeti(L, ser, s);
    lua_getfield(L, -1, "values");
    int n = (int)lua_objlen(L, -1);
    if (n > npts) npts = n;
    span_of(L, lua_gettop(L), &lo, &hi);
    lua_getfield(L, -2, "x");
    if (lua_istable(L, -1)) {
      if ((int)lua_objlen(L, -1) != n)
        l_errorf(L, "%s: series %d has %d values but %d x", op, s, n, (int)lua_objlen(L, -1));
      has_x = 1;
      span_of(L, lua_gettop(L), &xlo, &xhi);
    }
    lua_pop(L, 3);
  }
  lo = num_field(L, idx, "ymin", isfinite(lo) ? lo : 0);
  hi = num_field(L, idx, "ymax", isfinite(hi) ? hi : 1);
  if (hi <= lo) hi = lo + 1;
  if (has_x) {
    xlo = num_field(L, idx, "xmin", isfinite(xlo) ? xlo : 0);
    xhi = num_field(L, idx, "xmax", isfinite(xhi) ? xhi : 1);
    if (xhi <= xlo) xhi = xlo + 1;
  } else {
    xlo = 1;
    xhi = npts > 1 ? npts : 2;
  }
  lua_getfield(L, idx, "title");
  const char *title = lua_isstring(L, -1) ? lua_tostring(L, -1) : NULL;
  int left = x0 + 50, right = x0 + pw - 12, top = title ? 26 : 12, bottom = c->h - 28;
  if (title) text(c, (left + right) / 2 - (int)strlen(title) * 4, 8, title, fg, 2);
  lua_pop(L, 1);
  int legend_y = top + 8;
  /* grid and y labels */
  for (int k = 0; k <= 4; k++) {
    double v = lo + (hi - lo) * k / 4.0;
    int y = bottom - (int)lround((bottom - top) * k / 4.0);
    line(c, left, y, right, y, grid, 1);
    char s[32];
    fmt_tick(s, sizeof s, v, hi - lo);
    text(c, left - 6 - (int)strlen(s) * 8, y - 5, s, fg, 2);
  }
  /* x labels: first and last point (or the x range's ends), and the middle */
  for (int k = 0; k <= 2; k++) {
    char s[32];
    int x;
    if (has_x) {
      double v = xlo + (xhi - xlo) * k / 2.0;
      x = left + (int)lround((double)(right - left) * k / 2.0);
      fmt_tick(s, sizeof s, v, xhi - xlo);
    } else {
      int i = 1 + (npts - 1) * k / 2;
      x = left + (npts > 1 ? (int)lround((double)(right - left) * (i - 1) / (npts - 1)) : 0);
      snprintf(s, sizeof s, "%d", i);
    }
    line(c, x, bottom, x, bottom + 4, fg, 1);
    text(c, x - (int)strlen(s) * 4, bottom + 8, s, fg, 2);
  }
  line(c, left, top, left, bottom, fg, 1);
  line(c, left, bottom, right, bottom, fg, 1);
  line(c, right, top, right, bottom, fg, 1);
  line(c, left, top, right, top, fg, 1);
  for (int s = 1; s <= ns; s++) {
    lua_rawgeti(L, ser, s);
    int se = lua_gettop(L);
    int r = 31, g = 119, b = 180;
    lua_getfield(L, se, "color");
    if (lua_istable(L, -1)) {
      lua_rawgeti(L, -1, 1); r = (int)lua_tointeger(L, -1);
      lua_rawgeti(L, -2, 2); g = (int)lua_tointeger(L, -1);
      lua_rawgeti(L, -3, 3); b = (int)lua_tointeger(L, -1);
      lua_pop(L, 3);
    }
    lua_pop(L, 1);
    int col = color(c, r & 255, g & 255, b & 255);
    lua_getfield(L, se, "points");
    int points = lua_toboolean(L, -1);
    lua_pop(L, 1);
    lua_getfield(L, se, "label");
    if (lua_isstring(L, -1)) {
      const char *lab = lua_tostring(L, -1);
      int tx = right - 8 - (int)strlen(lab) * 8;
      if (points) line(c, tx - 14, legend_y + 4, tx - 14, legend_y + 4, col, 5);
      else line(c, tx - 22, legend_y + 4, tx - 6, legend_y + 4, col, 2);
      text(c, tx, legend_y, lab, fg, 2);
      legend_y += 16;
    }
    lua_pop(L, 1);
    lua_getfield(L, se, "x");
    int xs = lua_istable(L, -1) ? lua_gettop(L) : 0;
    lua_getfield(L, se, "values");
    int n = (int)lua_objlen(L, -1);
    double px = 0, py = 0;
    int have = 0;
    for (int i = 1; i <= n; i++) {
      lua_rawgeti(L, -1, i);
      double v = lua_tonumber(L, -1), xv = i;
      lua_pop(L, 1);
      if (xs) {
        lua_rawgeti(L, xs, i);
        xv = lua_tonumber(L, -1);
        lua_pop(L, 1);
      }
      if (!isfinite(v) || !isfinite(xv) || (points && (v < lo || v > hi || xv < xlo || xv > xhi))) {
        have = 0;
        continue;
      }
      v = fmin(fmax(v, lo), hi);
      xv = fmin(fmax(xv, xlo), xhi);
      double x = left + (double)(right - left) * (xv - xlo) / (xhi - xlo);
      double y = bottom - (bottom - top) * (v - lo) / (hi - lo);
      if (points) line(c, x, y, x, y, col, 3);
      else if (have) line(c, px, py, x, y, col, 2);
      else line(c, x, y, x, y, col, 3);
      px = x; py = y; have = 1;
    }
    lua_pop(L, 3);
  }
  lua_pop(L, 1);
}

static int l_plot_png(lua_State *L) {
  const char *op = "plot_png";
  const char *path = luaL_checkstring(L, 1);
  int64_t w = l_checkint(L, 2, op, "width"), h = l_checkint(L, 3, op, "height");
  luaL_checktype(L, 4, LUA_TTABLE);
  if (w < 64 || h < 64 || w > 8192 || h > 8192)
    return l_errorf(L, "%s: width and height must be in 64..8192, got %lld x %lld", op,
                    (long long)w, (long long)h);
  canvas *c = lua_newuserdata(L, sizeof(canvas) + (size_t)(w * h));
  c->w = (int)w;
  c->h = (int)h;
  c->ncol = 0;
  memset(c->px, color(c, 255, 255, 255), (size_t)(w * h));
  int np = (int)lua_objlen(L, 4);
  if (np < 1) return l_errorf(L, "%s: expected at least one panel", op);
  int pw = (int)w / np;
  for (int i = 1; i <= np; i++) {
    lua_rawgeti(L, 4, i);
    if (!lua_istable(L, -1)) return l_errorf(L, "%s: panel %d is not a table", op, i);
    panel(L, lua_gettop(L), c, (i - 1) * pw, pw, op);
    lua_pop(L, 1);
  }
  size_t raw = (size_t)h * (size_t)(w + 1), cap = raw + (raw / 65535 + 1) * 5 + 16;
  unsigned char *buf = lua_newuserdata(L, cap);
  if (!write_png(path, c, buf, cap)) return l_errorf(L, "%s: cannot write %s", op, path);
  lua_pushstring(L, path);
  return 1;
}

void l_open_plot(lua_State *L) {
  static const luaL_Reg fns[] = {{"_plot_png", l_plot_png}, {NULL, NULL}};
  l_add_functions(L, fns);
}
