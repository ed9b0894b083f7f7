package main

import (
	"fmt"
	"syscall"
	"time"
)

// Open files each process of the benchmark needs with the simulator, from
// what a run at 1000 clusters held: the simulator a listener per member,
// the connection of the operator that measures and one of an operator
// stopping; about 12 sockets per hung cluster per minute of hang (accepted,
// never read while it hangs); an operator one connection per member, a
// few per hung cluster while it dials them again, and a replica its share.
const (
	filesSpare             = 1024
	simFilesPerMember      = 3
	simFilesPerHungMinute  = 12
	simFilesPerHung        = 4
	operatorFilesPerMember = 2
	operatorFilesPerHung   = 4
)

// filesNeeded is about how many files this process opens: with -etcdsim-serve
// the simulator, with -replica an operator replica, else the benchmark with
// the operator in its process.
func filesNeeded() uint64 {
	members := uint64(*clusters + 2**scales) // the scale-ups add a member each
	hungClusters := uint64(max(*hung, 0))
	switch {
	case *etcdsimServe:
		perHung := simFilesPerHung + uint64(simFilesPerHungMinute*(*hangFor+time.Minute).Minutes())
		return filesSpare + simFilesPerMember*members + perHung*hungClusters
	case *replica != "" && *etcdsimAddr == "", *replica == "" && *etcdMode != "sim":
		return filesSpare // the fake etcd opens no connection
	case *replica != "":
		return filesSpare + operatorFilesPerMember*members
	default:
		return filesSpare + operatorFilesPerMember*members + operatorFilesPerHung*hungClusters
	}
}

// raiseFileLimit raises RLIMIT_NOFILE to need where it is lower, the hard
// limit too when the process may (root, or CAP_SYS_RESOURCE); the soft
// limit alone when need is within the hard one. (Go's runtime has already
// raised the soft limit to the hard one at start.) The processes this one
// starts inherit the limit.
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
		"raise the hard limit before the run (as root, ulimit -Hn %d in the shell that runs it; LimitNOFILE= in a systemd unit; nofile in /etc/security/limits.conf; fs.nr_open bounds them all), or run fewer clusters",
		role, need, *clusters, *hung, lim.Cur, lim.Max, err, need)
}
