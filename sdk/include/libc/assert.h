/* Minimal assert.h: a failed assertion prints its location and ends the run
 * with status 134 (the conventional SIGABRT status).  Honours NDEBUG and,
 * like the C standard requires, may be included repeatedly. */
#undef assert

#ifdef NDEBUG
#define assert(expr) ((void)0)
#else

#ifndef SOFTSPIN_LIBC_ASSERT_DECL
#define SOFTSPIN_LIBC_ASSERT_DECL
#ifdef __cplusplus
extern "C"
#endif
__attribute__((noreturn)) void __softspin_assert_fail(const char *expr,
                                                      const char *file,
                                                      int line,
                                                      const char *func);
#endif

#define assert(expr)                                                          \
    ((expr) ? (void)0                                                         \
            : __softspin_assert_fail(#expr, __FILE__, __LINE__, __func__))
#endif

#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && !defined(__cplusplus) && !defined(static_assert)
#define static_assert _Static_assert
#endif
