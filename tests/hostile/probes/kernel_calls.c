/* Call each system call a check never needs, with empty arguments, and print how the kernel
 * (or the sandbox's seccomp filter) answered: "<name> <errno>" (0 when the call went through).
 * The numbers come from this machine's own headers, not from the code under test. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#define TRY(name) do { errno = 0; long r = syscall(__NR_##name, 0, 0, 0, 0, 0, 0); \
    printf("%s %d\n", #name, r < 0 ? errno : 0); } while (0)

int main(void) {
    TRY(io_uring_setup);
    TRY(io_uring_enter);
    TRY(io_uring_register);
    TRY(bpf);
    TRY(userfaultfd);
    TRY(perf_event_open);
    TRY(keyctl);
    TRY(add_key);
    TRY(request_key);
    TRY(kexec_load);
    TRY(mount);
    TRY(fsopen);
    TRY(open_tree);
    TRY(init_module);
    TRY(open_by_handle_at);
    return 0;
}
