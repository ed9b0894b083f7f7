package main

import (
	"fmt"
	"syscall"
	"time"
)

// Open files each process of the benchmark needs with the simulator, from
// what runs at 1000 and 2000 clusters held: a simulator process a listener
// per member, the connection of the operator that measures and, while it
// hangs, about 11 sockets per hung cluster per minute (accepted, never read
// until it resumes); an operator process a connection per member and about
// one per hung cluster it dials again and again.
const (
	filesSpare            = 1024
	simFilesPerMember     = 2
	simFilesPerHung       = 4
	simFilesPerHungMinute = 12
	operatorFilesPerHung  = 4
)

// members is how many members the fleet has at most: the scale-ups add one
// each.
func members() int { return *clusters + 2**scales }

// operatorFiles is about how many files an operator process opens for
// members, hung of them hung.
func operatorFiles(members, hung int) uint64 {
	return filesSpare + uint64(members) + operatorFilesPerHung*uint64(max(hung, 0))
}

// simFiles is about how many files a simulator process opens for members,
// hung of them hung for -hang-for (and half a minute of measuring).
func simFiles(members, hung int) uint64 {
	perHung := simFilesPerHung + uint64(simFilesPerHungMinute*(*hangFor+30*time.Second).Minutes())
	return filesSpare + simFilesPerMember*uint64(members) + perHung*uint64(max(hung, 0))
}

// simFilesEach is simFiles for one of procs processes: a tenth more than
// its even share, as the clusters are spread by a hash.
func simFilesEach(procs int) uint64 {
	share := func(n int) int { return (11*n + 10*procs - 1) / (10 * procs) }
	return simFiles(share(members()), share(*hung))
}

// simProcessCount is how many processes the simulator needs: one when this
// process may raise its open-file limit to what one needs (the simulator
// inherits it), else as many as the hard limit asks.
func simProcessCount() (int, error) {
	if *simProcs > 0 {
		return *simProcs, nil
	}
	if raiseFileLimit("the etcd simulator", simFiles(members(), *hung)) == nil {
		return 1, nil
	}
	hard, err := hardFileLimit()
	if err != nil {
		return 0, err
	}
	for procs := 2; procs <= 64; procs++ {
		if simFilesEach(procs) <= hard {
			return procs, nil
		}
	}
	return 0, fmt.Errorf("the etcd simulator would need more than 64 processes for -clusters=%d with an open-file limit of %d: raise the hard limit", *clusters, hard)
}

func hardFileLimit() (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("read the open files limit: %w", err)
	}
	return lim.Max, nil
}

// raiseFileLimit raises RLIMIT_NOFILE to need where it is lower, the hard
// limit too when the process may (CAP_SYS_RESOURCE, which root in a
// container may lack); the soft limit alone when need is within the hard
// one. (Go's runtime has already raised the soft limit near the hard one
// at start.) The processes this one starts inherit the limit.
func raiseFileLimit(role string, need uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("read the open files limit: %w", err)
	}
	if lim.Cur >= need {
		return nil
	}
	err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: need, Max: max(lim.Max, need)})
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s needs about %d open files for -clusters=%d and -hung=%d, but its limit is %d (hard %d) and cannot be raised (%v): "+
		"raise the hard limit before the run (ulimit -Hn %d in the shell that runs it, which needs CAP_SYS_RESOURCE; LimitNOFILE= in a systemd unit; nofile in /etc/security/limits.conf; --ulimit nofile= for a container; fs.nr_open bounds them all), or run fewer clusters",
		role, need, *clusters, *hung, lim.Cur, lim.Max, err, need)
}
