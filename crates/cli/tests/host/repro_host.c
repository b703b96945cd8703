/*
 * The C host API reproductions of issue 10 for crates/cli/tests/
 * reproductions.rs: `repro_host CASE [IMAGE]` makes one bad call and
 * prints `status=N error=TEXT`. Exit 0: the call was refused with an error
 * and the NIC still works; 9: the call was accepted; 8: setup failed.
 */
#include <softspin.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int refused(const char *what, int r)
{
    printf("%s: status=%d error=%s\n", what, r, r ? ss_last_error() : "");
    return r < 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return 8;
    ss_nic *nic;
    if (ss_open("pspin", &nic))
        return 8;
    int ok = 0;
    if (!strcmp(argv[1], "host_read")) {
        static unsigned char buf[64];
        ok = refused("ss_host_read(nic, 0, buf, 1<<40)", ss_host_read(nic, 0, buf, (size_t)1 << 40));
    } else if (!strcmp(argv[1], "window_create")) {
        ss_host_window w;
        ok = refused("ss_host_window_create(nic, SIZE_MAX)", ss_host_window_create(nic, SIZE_MAX, &w));
        /* The handle must still work afterwards. */
        int r = ss_host_window_create(nic, 4096, &w);
        printf("then ss_host_window_create(nic, 4096): status=%d\n", r);
        ok = ok && r == 0;
    } else if (!strcmp(argv[1], "forged_window") && argc > 2) {
        ss_image *img;
        ss_host_window a, b;
        if (ss_image_load(nic, argv[2], &img) || ss_host_window_create(nic, 4096, &a) ||
            ss_host_window_create(nic, 4096, &b))
            return 8;
        ss_ectx_options o;
        ss_ectx_options_init(&o);
        o.ph = "empty_ph";
        o.host_window = a;
        /* Enlarged to cover B's window too. */
        o.host_window.size = (b.base > a.base ? b.base - a.base : a.base - b.base) + b.size;
        ss_ectx e;
        ok = refused("ss_install with host_window.size enlarged", ss_install(nic, img, &o, &e));
        o.host_window = a;
        int r = ss_install(nic, img, &o, &e);
        printf("then ss_install with the window as created: status=%d\n", r);
        ok = ok && r == 0;
    } else {
        return 8;
    }
    ss_close(nic);
    return ok ? 0 : 9;
}
