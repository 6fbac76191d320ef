/* Reach a Unix socket without socket(2): io_uring's IORING_OP_SOCKET and IORING_OP_CONNECT,
 * through the raw system calls (no liburing). Prints one line saying how far it got. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef IORING_OP_SOCKET
#define IORING_OP_SOCKET 45
#endif

static struct io_uring_params p;
static unsigned *sq_tail, *sq_mask, *sq_array, *cq_head, *cq_tail, *cq_mask;
static struct io_uring_sqe *sqes;
static struct io_uring_cqe *cqes;
static int ring;

static int submit(struct io_uring_sqe *one) {
    unsigned tail = *sq_tail, at = tail & *sq_mask;
    sqes[at] = *one;
    sq_array[at] = at;
    __atomic_store_n(sq_tail, tail + 1, __ATOMIC_RELEASE);
    if (syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) return -100000 - errno;
    unsigned head = __atomic_load_n(cq_head, __ATOMIC_ACQUIRE);
    int res = cqes[head & *cq_mask].res;
    __atomic_store_n(cq_head, head + 1, __ATOMIC_RELEASE);
    return res;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    ring = syscall(__NR_io_uring_setup, 4, &p);
    if (ring < 0) { printf("io_uring_setup refused errno=%d\n", errno); return 0; }
    size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    char *sq = mmap(0, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
    char *cq = mmap(0, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
    sqes = mmap(0, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
    if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) { printf("mmap failed errno=%d\n", errno); return 0; }
    sq_tail = (unsigned *)(sq + p.sq_off.tail); sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
    sq_array = (unsigned *)(sq + p.sq_off.array);
    cq_head = (unsigned *)(cq + p.cq_off.head); cq_tail = (unsigned *)(cq + p.cq_off.tail);
    cq_mask = (unsigned *)(cq + p.cq_off.ring_mask); cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);

    struct io_uring_sqe sqe;
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = IORING_OP_SOCKET; sqe.fd = AF_UNIX; sqe.off = SOCK_STREAM; sqe.len = 0;
    int fd = submit(&sqe);
    if (fd < 0) { printf("IORING_OP_SOCKET refused res=%d\n", fd); return 0; }

    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, argv[1], sizeof addr.sun_path - 1);
    memset(&sqe, 0, sizeof sqe);
    sqe.opcode = IORING_OP_CONNECT; sqe.fd = fd; sqe.addr = (unsigned long)&addr; sqe.off = sizeof addr;
    int res = submit(&sqe);
    if (res < 0) { printf("IORING_OP_CONNECT refused res=%d\n", res); return 0; }
    write(fd, "hello from the sandbox\n", 23);
    printf("CONNECTED through io_uring\n");
    return 0;
}
