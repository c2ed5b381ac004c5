// SPDX-License-Identifier: GPL-2.0-only
/*
 * kvmdrive: the workload of the probe guest (scripts/probe/probe.py).  A
 * static program that makes kvm.ko run the functions the probes watch, a
 * fixed number of times each, so that a probe's hits can be compared with
 * the function tracer's on the same run:
 *
 *   - KVM_CREATE_VM, an in-kernel irqchip, two memory slots, one vCPU;
 *   - N writes to an eventfd bound with KVM_IRQFD: each write wakes the
 *     irqfd's wait queue entry (virt/kvm/eventfd.c irqfd_wakeup);
 *   - N madvise(MADV_DONTNEED) on the second slot's memory: each is an
 *     mmu notifier invalidation of the VM's mm
 *     (virt/kvm/kvm_main.c kvm_mmu_notifier_invalidate_range_start/_end);
 *   - N KVM_RUN of a vCPU put in the halted state (KVM_SET_MP_STATE) with
 *     interrupts off: each run goes straight to the kernel's halt
 *     (arch/x86/kvm/x86.c vcpu_block, virt/kvm/kvm_main.c kvm_vcpu_halt)
 *     and stays there until a SIGALRM ends it (EINTR).  The vCPU never
 *     enters the guest: a vCPU that had to run guest code to its hlt
 *     first could be interrupted before it (a loaded host, nested SVM
 *     under TCG), and then kvm_vcpu_halt ran fewer times than counted.
 *
 * Usage: kvmdrive [N]   (default 3).  Prints "kvmdrive: ok irqfd=N
 * madvise=N halt=N" when everything did what it should, else a line that
 * starts "kvmdrive: error" and exits 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#define SLOT0 0x10000UL
#define SLOT1 0x4000UL

static void die(const char *what)
{
	printf("kvmdrive: error %s: %s\n", what, strerror(errno));
	exit(1);
}

static void on_alarm(int sig)
{
	(void)sig;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3;
	int kvm, vm, vcpu, efd, i, halts = 0, runsz;
	uint8_t *mem0, *mem1;
	struct kvm_run *run;
	struct kvm_mp_state halted = { .mp_state = KVM_MP_STATE_HALTED };
	struct kvm_irqfd irqfd;
	struct sigaction sa;
	struct itimerval it;

	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (kvm < 0)
		die("open /dev/kvm");
	vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		die("KVM_CREATE_VM");
	mem0 = mmap(NULL, SLOT0, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mem1 = mmap(NULL, SLOT1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem0 == MAP_FAILED || mem1 == MAP_FAILED)
		die("mmap");
	/*
	 * No code runs in slot 0 (the vCPU starts halted, below), but its
	 * KVM_SET_USER_MEMORY_REGION is one of the six VM ioctls whose
	 * kvm_vm_ioctl hits docs/probes.md records, so the slot stays.
	 */
	struct kvm_userspace_memory_region r0 = {
		.slot = 0, .guest_phys_addr = 0, .memory_size = SLOT0,
		.userspace_addr = (uintptr_t)mem0,
	};
	struct kvm_userspace_memory_region r1 = {
		.slot = 1, .guest_phys_addr = 0x100000, .memory_size = SLOT1,
		.userspace_addr = (uintptr_t)mem1,
	};
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &r0) < 0 ||
	    ioctl(vm, KVM_SET_USER_MEMORY_REGION, &r1) < 0)
		die("KVM_SET_USER_MEMORY_REGION");
	if (ioctl(vm, KVM_CREATE_IRQCHIP, 0) < 0)
		die("KVM_CREATE_IRQCHIP");
	vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	if (vcpu < 0)
		die("KVM_CREATE_VCPU");
	runsz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (runsz <= 0)
		die("KVM_GET_VCPU_MMAP_SIZE");
	run = mmap(NULL, runsz, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED)
		die("mmap vcpu");

	/* irqfd: each write to the eventfd wakes irqfd_wakeup once. */
	efd = eventfd(0, EFD_CLOEXEC);
	if (efd < 0)
		die("eventfd");
	memset(&irqfd, 0, sizeof(irqfd));
	irqfd.fd = efd;
	irqfd.gsi = 4;
	if (ioctl(vm, KVM_IRQFD, &irqfd) < 0)
		die("KVM_IRQFD");
	for (i = 0; i < n; i++) {
		uint64_t one = 1;

		if (write(efd, &one, sizeof(one)) != sizeof(one))
			die("eventfd write");
		usleep(20000);
	}
	irqfd.flags = KVM_IRQFD_FLAG_DEASSIGN;
	if (ioctl(vm, KVM_IRQFD, &irqfd) < 0)
		die("KVM_IRQFD deassign");

	/* mmu notifier: each madvise is one invalidation of the VM's mm. */
	for (i = 0; i < n; i++) {
		memset(mem1, i + 1, SLOT1);
		if (madvise(mem1, SLOT1, MADV_DONTNEED) < 0)
			die("madvise");
	}

	/*
	 * halt: each KVM_RUN blocks in kvm_vcpu_halt until SIGALRM.  A new
	 * vCPU has interrupts off (RFLAGS 0x2), so nothing wakes it but the
	 * signal; were it runnable, it would enter the guest at the reset
	 * vector, outside guest memory, and KVM_RUN would return 0 (below).
	 */
	if (ioctl(vcpu, KVM_SET_MP_STATE, &halted) < 0)
		die("KVM_SET_MP_STATE");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	for (i = 0; i < n; i++) {
		memset(&it, 0, sizeof(it));
		it.it_value.tv_usec = 200000;
		setitimer(ITIMER_REAL, &it, NULL);
		if (ioctl(vcpu, KVM_RUN, 0) == 0) {
			printf("kvmdrive: error KVM_RUN returned 0, exit reason %u\n", run->exit_reason);
			return 1;
		}
		if (errno != EINTR)
			die("KVM_RUN");
		halts++;
	}
	printf("kvmdrive: ok irqfd=%d madvise=%d halt=%d\n", n, n, halts);
	return 0;
}
