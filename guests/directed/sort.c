/* sort: four sorting algorithms over pseudo-random signed 32-bit arrays.
 *
 * Arrays come from the LCG x <- 1664525 x + 1013904223 (seed 12345, values
 * read as int32_t).  For each algorithm and length the guest prints
 *   "<algo> n=<n> sorted=<0|1> hash=<fnv1a-32 of the sorted words, hex>"
 * and at the end the first eight values of the sorted 17-element array.  It
 * exits 0 when every result was sorted and all algorithms agreed, else 1.
 * tests/guests computes the same lines on the host with std::sort.
 */
#include "rt.h"

#define MAXN 300

static int32_t input[MAXN], work[MAXN], tmp[MAXN];

static void fill(int32_t *a, int n, uint32_t seed) {
  uint32_t x = seed;
  for (int i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    a[i] = (int32_t)x;
  }
}

static void insertion_sort(int32_t *a, int n) {
  for (int i = 1; i < n; i++) {
    int32_t v = a[i];
    int j = i - 1;
    while (j >= 0 && a[j] > v) {
      a[j + 1] = a[j];
      j--;
    }
    a[j + 1] = v;
  }
}

static void quick_sort(int32_t *a, int lo, int hi) { /* [lo, hi] inclusive */
  while (lo < hi) {
    int32_t pivot = a[lo + ((hi - lo) >> 1)];
    int i = lo, j = hi;
    while (i <= j) {
      while (a[i] < pivot) i++;
      while (a[j] > pivot) j--;
      if (i <= j) {
        int32_t t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    if (j - lo < hi - i) {
      quick_sort(a, lo, j);
      lo = i;
    } else {
      quick_sort(a, i, hi);
      hi = j;
    }
  }
}

static void merge_sort(int32_t *a, int32_t *t, int n) {
  for (int width = 1; width < n; width <<= 1) {
    for (int lo = 0; lo < n; lo += 2 * width) {
      int mid = lo + width < n ? lo + width : n;
      int hi = lo + 2 * width < n ? lo + 2 * width : n;
      int i = lo, j = mid, k = lo;
      while (i < mid && j < hi) t[k++] = a[i] <= a[j] ? a[i++] : a[j++];
      while (i < mid) t[k++] = a[i++];
      while (j < hi) t[k++] = a[j++];
    }
    for (int i = 0; i < n; i++) a[i] = t[i];
  }
}

static void sift_down(int32_t *a, int root, int n) {
  for (;;) {
    int child = 2 * root + 1;
    if (child >= n) return;
    if (child + 1 < n && a[child + 1] > a[child]) child++;
    if (a[root] >= a[child]) return;
    int32_t t = a[root];
    a[root] = a[child];
    a[child] = t;
    root = child;
  }
}

static void heap_sort(int32_t *a, int n) {
  for (int i = n / 2 - 1; i >= 0; i--) sift_down(a, i, n);
  for (int end = n - 1; end > 0; end--) {
    int32_t t = a[0];
    a[0] = a[end];
    a[end] = t;
    sift_down(a, 0, end);
  }
}

static int is_sorted(const int32_t *a, int n) {
  for (int i = 1; i < n; i++)
    if (a[i - 1] > a[i]) return 0;
  return 1;
}

static uint32_t fnv1a(const int32_t *a, int n) {
  uint32_t h = 2166136261u;
  for (int i = 0; i < n; i++) {
    uint32_t v = (uint32_t)a[i];
    for (int b = 0; b < 4; b++) {
      h ^= (v >> (8 * b)) & 0xFF;
      h *= 16777619u;
    }
  }
  return h;
}

int main(void) {
  static const int sizes[] = {0, 1, 2, 17, 100, 300};
  static const char *const names[] = {"insertion", "quick", "merge", "heap"};
  int ok = 1;
  for (unsigned s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    int n = sizes[s];
    fill(input, n, 12345u + (uint32_t)n);
    uint32_t first_hash = 0;
    for (int alg = 0; alg < 4; alg++) {
      for (int i = 0; i < n; i++) work[i] = input[i];
      switch (alg) {
        case 0: insertion_sort(work, n); break;
        case 1: if (n > 0) quick_sort(work, 0, n - 1); break;
        case 2: merge_sort(work, tmp, n); break;
        default: heap_sort(work, n); break;
      }
      int sorted = is_sorted(work, n);
      uint32_t h = fnv1a(work, n);
      if (alg == 0) first_hash = h;
      if (!sorted || h != first_hash) ok = 0;
      print_str(names[alg]);
      print_str(" n=");
      print_dec(n);
      print_str(" sorted=");
      print_dec(sorted);
      print_str(" hash=");
      print_hex32(h);
      print_char('\n');
    }
  }
  fill(input, 17, 12345u + 17u);
  heap_sort(input, 17);
  print_str("first8:");
  for (int i = 0; i < 8; i++) {
    print_char(' ');
    print_dec(input[i]);
  }
  print_char('\n');
  print_str(ok ? "sort: ok\n" : "sort: FAILED\n");
  return ok ? 0 : 1;
}
