/* The kernel baseline of the UDP ping-pong: a plain blocking socket server
 * that sends every datagram back to its sender (what FPsPIN's host mode does
 * with dgpingd, seed 000 §6.3.1).
 *
 *   udp_echo_server PORT [SECONDS]    (0 or absent: until killed)
 */
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: udp_echo_server PORT [SECONDS]\n");
        return 2;
    }
    int port = (int)arg_long("PORT", argv[1], 1, 65535);
    long secs = argc > 2 ? arg_long("SECONDS", argv[2], 0, 86400) : 0;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        die("socket");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0)
        die("bind");
    if (secs)
        alarm((unsigned)secs); /* SIGALRM ends the process */
    fprintf(stderr, "udp_echo_server: listening on %d\n", port);
    char buf[65536];
    unsigned long n = 0;
    for (;;) {
        struct sockaddr_in from;
        socklen_t fl = sizeof from;
        ssize_t r = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
        if (r < 0)
            die("recvfrom");
        if (sendto(fd, buf, (size_t)r, 0, (struct sockaddr *)&from, fl) < 0)
            die("sendto");
        n++;
    }
}
