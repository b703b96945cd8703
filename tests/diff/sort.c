/* Sorting pseudo-random arrays (LCG) with hand-written quicksort, heapsort,
 * merge sort and insertion sort; the results are verified and summarised. */
#include <stdint.h>
#include <stdio.h>

#define N 600

static uint32_t lcg_state;
static uint32_t lcg(void)
{
    lcg_state = lcg_state * 1664525u + 1013904223u;
    return lcg_state;
}

static uint32_t hash = 2166136261u;
static void mix(uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        hash ^= (v >> (8 * i)) & 0xff;
        hash *= 16777619u;
    }
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void swap_bytes(uint8_t *a, uint8_t *b, unsigned size)
{
    for (unsigned i = 0; i < size; i++) {
        uint8_t t = a[i];
        a[i] = b[i];
        b[i] = t;
    }
}

/* qsort-compatible quicksort: median-of-three, insertion sort below 8. */
static void my_qsort(void *base, unsigned n, unsigned size,
                     int (*cmp)(const void *, const void *))
{
    uint8_t *b = (uint8_t *)base;
    while (n > 8) {
        uint8_t *lo = b, *mid = b + (n / 2) * size, *hi = b + (n - 1) * size;
        if (cmp(mid, lo) < 0)
            swap_bytes(mid, lo, size);
        if (cmp(hi, mid) < 0) {
            swap_bytes(hi, mid, size);
            if (cmp(mid, lo) < 0)
                swap_bytes(mid, lo, size);
        }
        swap_bytes(mid, b, size); /* pivot to the front */
        unsigned i = 1, j = n - 1;
        for (;;) {
            while (i <= j && cmp(b + i * size, b) < 0)
                i++;
            while (j >= i && cmp(b + j * size, b) > 0)
                j--;
            if (i >= j)
                break;
            swap_bytes(b + i * size, b + j * size, size);
            i++;
            j--;
        }
        swap_bytes(b, b + j * size, size);
        /* Recurse into the smaller part, loop on the larger. */
        unsigned left = j, right = n - j - 1;
        if (left < right) {
            my_qsort(b, left, size, cmp);
            b += (j + 1) * size;
            n = right;
        } else {
            my_qsort(b + (j + 1) * size, right, size, cmp);
            n = left;
        }
    }
    for (unsigned i = 1; i < n; i++)
        for (unsigned k = i; k > 0 && cmp(b + (k - 1) * size, b + k * size) > 0; k--)
            swap_bytes(b + (k - 1) * size, b + k * size, size);
}

static void sift_down(uint32_t *a, unsigned root, unsigned n)
{
    for (;;) {
        unsigned child = 2 * root + 1;
        if (child >= n)
            return;
        if (child + 1 < n && a[child + 1] > a[child])
            child++;
        if (a[root] >= a[child])
            return;
        uint32_t t = a[root];
        a[root] = a[child];
        a[child] = t;
        root = child;
    }
}

static void heapsort_u32(uint32_t *a, unsigned n)
{
    for (unsigned i = n / 2; i-- > 0;)
        sift_down(a, i, n);
    for (unsigned end = n; end-- > 1;) {
        uint32_t t = a[0];
        a[0] = a[end];
        a[end] = t;
        sift_down(a, 0, end);
    }
}

static uint16_t tmp16[N];
static void mergesort_u16(uint16_t *a, unsigned n)
{
    for (unsigned width = 1; width < n; width *= 2) {
        for (unsigned lo = 0; lo < n; lo += 2 * width) {
            unsigned mid = lo + width < n ? lo + width : n;
            unsigned hi = lo + 2 * width < n ? lo + 2 * width : n;
            unsigned i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                tmp16[k++] = a[j] < a[i] ? a[j++] : a[i++];
            while (i < mid)
                tmp16[k++] = a[i++];
            while (j < hi)
                tmp16[k++] = a[j++];
        }
        for (unsigned i = 0; i < n; i++)
            a[i] = tmp16[i];
    }
}

static void insertion_i8(int8_t *a, unsigned n)
{
    for (unsigned i = 1; i < n; i++) {
        int8_t v = a[i];
        unsigned k = i;
        while (k > 0 && a[k - 1] > v) {
            a[k] = a[k - 1];
            k--;
        }
        a[k] = v;
    }
}

static int32_t a32[N];
static uint32_t u32[N];
static uint16_t u16[N];
static int8_t i8[N / 4];

int main(void)
{
    for (unsigned round = 0; round < 4; round++) {
        lcg_state = 0x1234u + round * 7919u;
        unsigned n = N - round * 97;
        for (unsigned i = 0; i < n; i++) {
            uint32_t r = lcg();
            /* Round 2 has many duplicates, round 3 is nearly sorted. */
            a32[i] = round == 2 ? (int32_t)(r >> 28) - 8
                     : round == 3 ? (int32_t)i * 3 - (int32_t)(r >> 30)
                                  : (int32_t)r;
            u32[i] = r ^ (r >> 7);
            u16[i] = (uint16_t)(r >> 9);
        }
        for (unsigned i = 0; i < n / 4; i++)
            i8[i] = (int8_t)(lcg() >> 24);

        my_qsort(a32, n, sizeof a32[0], cmp_i32);
        heapsort_u32(u32, n);
        mergesort_u16(u16, n);
        insertion_i8(i8, n / 4);

        unsigned bad = 0;
        for (unsigned i = 1; i < n; i++) {
            bad += a32[i - 1] > a32[i];
            bad += u32[i - 1] > u32[i];
            bad += u16[i - 1] > u16[i];
        }
        for (unsigned i = 1; i < n / 4; i++)
            bad += i8[i - 1] > i8[i];
        int64_t sum = 0;
        for (unsigned i = 0; i < n; i++) {
            mix((uint32_t)a32[i]);
            mix(u32[i]);
            mix(u16[i]);
            sum += a32[i];
        }
        for (unsigned i = 0; i < n / 4; i++)
            mix((uint32_t)(int32_t)i8[i]);
        printf("round %u n=%u unsorted=%u sum=%lld\n", round, n, bad,
               (long long)sum);
        printf("  i32: %d %d %d %d\n", a32[0], a32[1], a32[n / 2], a32[n - 1]);
        printf("  u32: %u %u %u\n", u32[0], u32[n / 2], u32[n - 1]);
        printf("  u16: %u %u %u  i8: %d %d\n", u16[0], u16[n / 2], u16[n - 1],
               i8[0], i8[n / 4 - 1]);
    }
    printf("hash=%08x\n", hash);
    return 0;
}
