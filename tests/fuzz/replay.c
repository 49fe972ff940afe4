/*
** replay.c -- runs fuzz inputs through a fuzz target without libFuzzer:
** replay FILE... feeds each file to LLVMFuzzerTestOneInput. ctest runs the
** committed corpus this way (under the sanitizers in make test-asan), so
** every input that once found a bug stays a regression test.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  int n = 0;
  for (int i = 1; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    if (!f) { printf("replay: cannot open %s\n", argv[i]); return 1; }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
    if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) { fclose(f); return 1; }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)len);
    free(buf);
    n++;
  }
  printf("replayed %d inputs\nC-CASES: %d passed, 0 failed\n", n, n);
  return 0;
}
