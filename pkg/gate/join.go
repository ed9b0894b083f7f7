package gate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Join is the entrypoint of the etcd container of a member that joins a
// running cluster (a prepared joiner): its Pod is created, scheduled, its
// volume bound and its image started while the operator is still adding
// other members, and etcd starts only once etcd lists the member.
//
//	raftsman-gate join --name N --peer-url U --data-dir D --peers P1,P2 \
//	    [--cert F --key F --cacert F] [--restart --after A1,A2] -- /usr/local/bin/etcd ARGS...
//
// It asks the peers for etcd's member list (GET /members on the peer port,
// what etcd itself asks when a member joins; with the member's own peer
// certificate) until the list holds the member's peer URL, then replaces
// --initial-cluster in ARGS with that list and execs etcd, after any other
// joiner named before it has started (joinerBefore) and without etcd's
// initial corruption check (withoutInitialCorruptCheck). etcd checks that a
// joining member's --initial-cluster is the cluster's member list ("member
// count is unequal" otherwise); a list taken at the moment of the start is
// right whatever changed since the member was made, and a start that races
// another change fails, is restarted by the kubelet, and asks again.
//
// Safety: etcd never starts for a member etcd does not list, so a joiner
// that was never added (a scale that went back, an operator that died
// before the add) never runs and never takes part in any vote. A member
// whose etcd has a WAL already joined, and a Pod that is not a joiner's
// first (--restart) never joins: etcd starts with ARGS as they are, once
// the members of --after serve their peers (waitForPeers).
func Join(ctx context.Context, args []string) error {
	cfg, err := parseJoin(args)
	if err != nil {
		return err
	}
	final, err := cfg.gate(ctx)
	if err != nil {
		return err
	}
	bin, err := exec.LookPath(final[0])
	if err != nil {
		return fmt.Errorf("find %s: %w", final[0], err)
	}
	// exec keeps the container's process: etcd gets the kubelet's signals.
	return syscall.Exec(bin, final, os.Environ())
}

// joinConfig is what the gate knows about its member.
type joinConfig struct {
	name, peerURL, dataDir string
	peers                  []string
	// after are the peer URLs of members that start before this one, when
	// it has data (a resume: waitForPeers).
	after []string
	// restart: a Pod that is not a joiner's first; it never joins.
	restart           bool
	cert, key, caFile string
	interval, timeout time.Duration
	// turnWait bounds how long a listed joiner waits for one named before
	// it to start; probeTimeout how long that one has to answer.
	turnWait, probeTimeout time.Duration
	etcd                   []string
	// logEvery is how often a waiting gate says so.
	logEvery time.Duration
	out      io.Writer
}

func parseJoin(args []string) (*joinConfig, error) {
	f := flag.NewFlagSet("join", flag.ContinueOnError)
	c := &joinConfig{out: os.Stderr, logEvery: 10 * time.Second, turnWait: 10 * time.Second, probeTimeout: 500 * time.Millisecond}
	var peers, after string
	f.StringVar(&after, "after", "", "not a joiner's first start: comma-separated peer URLs of members that start first; etcd starts once each serves its peers (10 s at most)")
	f.BoolVar(&c.restart, "restart", false, "not a joiner's first start: etcd starts on its data directory, with the command line as given")
	f.StringVar(&c.name, "name", "", "the member's name")
	f.StringVar(&c.peerURL, "peer-url", "", "the member's peer URL, as etcd lists it")
	f.StringVar(&c.dataDir, "data-dir", "", "etcd's data directory: a member with data starts at once")
	f.StringVar(&peers, "peers", "", "comma-separated peer URLs of members to ask for the member list")
	f.StringVar(&c.cert, "cert", "", "peer certificate to present")
	f.StringVar(&c.key, "key", "", "its key")
	f.StringVar(&c.caFile, "cacert", "", "CA bundle the peers' certificates are checked against")
	f.DurationVar(&c.interval, "interval", 500*time.Millisecond, "time between two rounds of asking")
	f.DurationVar(&c.timeout, "timeout", 2*time.Second, "time each peer has to answer")
	if err := f.Parse(args); err != nil {
		return nil, err
	}
	c.etcd = f.Args()
	for p := range strings.SplitSeq(after, ",") {
		if p = strings.TrimSpace(p); p != "" && p != c.peerURL {
			c.after = append(c.after, p)
		}
	}
	if c.name == "" || c.peerURL == "" || c.dataDir == "" || len(c.etcd) == 0 {
		return nil, errors.New("--name, --peer-url, --data-dir and the etcd command after -- are required")
	}
	for p := range strings.SplitSeq(peers, ",") {
		if p = strings.TrimSpace(p); p != "" && p != c.peerURL && !slices.Contains(c.peers, p) {
			c.peers = append(c.peers, p)
		}
	}
	return c, nil
}

// peerMember is a member as etcd's peer /members answers.
type peerMember struct {
	Name      string   `json:"name"`
	PeerURLs  []string `json:"peerURLs"`
	IsLearner bool     `json:"isLearner"`
}

// gate returns etcd's command line once etcd lists the member. A member
// whose etcd has a WAL joined already: etcd starts with its own log. So
// does every Pod that is not a joiner's first (it has --after, possibly
// empty of peers): etcd decides from its data, and check-data has refused
// the Pod of a member that ran and lost it. Only a WAL counts: a join that
// fails at bootstrap (a list that changed meanwhile, a peer not answering)
// leaves a database file behind and no WAL, and its restart must ask for
// the member list again.
func (c *joinConfig) gate(ctx context.Context) ([]string, error) {
	hasWAL, err := NonEmpty(filepath.Join(c.dataDir, "member", "wal"))
	if err != nil {
		return nil, err
	}
	if hasWAL || c.restart {
		c.waitForPeers(ctx)
		fmt.Fprintf(c.out, "member %s starts etcd on its data directory\n", c.name)
		return c.etcd, nil
	}
	fmt.Fprintf(c.out, "member %s waits until etcd lists %s (asking %s)\n", c.name, c.peerURL, strings.Join(c.peers, ", "))
	start, lastLog := time.Now(), time.Now()
	var listedAt time.Time
	for {
		members, from, err := c.members(ctx)
		wait := c.interval
		if err == nil {
			if listed(members, c.peerURL) {
				if listedAt.IsZero() {
					listedAt = time.Now()
				}
				before := c.joinerBefore(ctx, members)
				if before == "" || time.Since(listedAt) >= c.turnWait {
					ic := initialCluster(members, c.name, c.peerURL)
					fmt.Fprintf(c.out, "etcd lists %s (member list from %s after %s): starting etcd with --initial-cluster=%s\n", c.peerURL, from, time.Since(start).Round(time.Millisecond), ic)
					return withoutInitialCorruptCheck(withInitialCluster(c.etcd, ic)), nil
				}
				if time.Since(lastLog) >= c.logEvery || lastLog.Before(listedAt) {
					lastLog = time.Now()
					fmt.Fprintf(c.out, "etcd lists %s; member %s, added too, starts first (a joining etcd asks every member for its version, and one that starts at the same moment answers only after 7 s)\n", c.peerURL, before)
				}
				// Its start takes a fraction of a second: look again soon.
				wait = min(wait, 100*time.Millisecond)
				select {
				case <-ctx.Done():
					return nil, fmt.Errorf("stopped while waiting for %s to start: %w", before, ctx.Err())
				case <-time.After(wait):
				}
				continue
			}
			// Members that joined since the Pod was made are asked too:
			// the ones it was made with may all be gone by the time it is
			// added.
			for _, m := range members {
				for _, u := range m.PeerURLs {
					if u != c.peerURL && !slices.Contains(c.peers, u) {
						c.peers = append(c.peers, u)
					}
				}
			}
		}
		if time.Since(lastLog) >= c.logEvery {
			lastLog = time.Now()
			why := fmt.Sprintf("%s's member list does not have it yet", from)
			if err != nil {
				why = err.Error()
			}
			fmt.Fprintf(c.out, "member %s still waits after %s: %s\n", c.name, time.Since(start).Round(time.Second), why)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("stopped while waiting to be listed: %w", ctx.Err())
		case <-time.After(wait):
		}
	}
}

// waitForPeers waits, at most turnWait in all, until each member of after
// serves its peers. The member controller names them when every member of
// the cluster starts again at once (a resume from suspend, every Pod lost):
// etcd's initial corruption check asks every peer for its data's hash
// before the member serves its own peers, and a peer that starts at the
// same moment listens and answers nothing until its own check is over, at
// the request's 7 s timeout. In name order, each member finds every peer
// serving or not listening, and passes at once.
func (c *joinConfig) waitForPeers(ctx context.Context) {
	if len(c.after) == 0 {
		return
	}
	hc, err := c.httpClient()
	if err != nil {
		fmt.Fprintf(c.out, "member %s starts without waiting for its peers: %v\n", c.name, err)
		return
	}
	defer hc.CloseIdleConnections()
	start := time.Now()
	for _, p := range c.after {
		for !servesPeers(ctx, hc, p, c.probeTimeout) {
			if time.Since(start) >= c.turnWait || ctx.Err() != nil {
				fmt.Fprintf(c.out, "member %s starts without waiting any longer for %s (%s)\n", c.name, p, time.Since(start).Round(time.Millisecond))
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	fmt.Fprintf(c.out, "member %s: the members before it serve their peers (%s)\n", c.name, time.Since(start).Round(time.Millisecond))
}

// joinerBefore names a member added and not started yet, named before
// this one, whose etcd does not serve its peers yet: this joiner starts
// after it. A joining etcd asks every member of its --initial-cluster for
// its version (etcd's compatibility check) before it serves its own
// peers. A member not started refuses the connection at once, but one
// that starts at the same moment listens and answers nothing until its own
// check is over, after the request's 7 s timeout: joiners that started
// together waited 7 s for each other joiner. In name order, each one finds
// the others serving or not listening. "" when none.
func (c *joinConfig) joinerBefore(ctx context.Context, ms []peerMember) string {
	hc, err := c.httpClient()
	if err != nil {
		return ""
	}
	defer hc.CloseIdleConnections()
	for _, m := range ms {
		if m.Name != "" || len(m.PeerURLs) == 0 || slices.Contains(m.PeerURLs, c.peerURL) {
			continue // started, or this one
		}
		name := hostLabel(m.PeerURLs[0])
		if name >= c.name {
			continue
		}
		if !servesPeers(ctx, hc, m.PeerURLs[0], c.probeTimeout) {
			return name
		}
	}
	return ""
}

// servesPeers says whether etcd answers on the peer URL.
func servesPeers(ctx context.Context, hc *http.Client, peer string, timeout time.Duration) bool {
	u, err := url.JoinPath(peer, "version")
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	return resp.StatusCode == http.StatusOK
}

// members asks each peer in turn and returns the first answer.
func (c *joinConfig) members(ctx context.Context) ([]peerMember, string, error) {
	if len(c.peers) == 0 {
		return nil, "", errors.New("no peer to ask")
	}
	hc, err := c.httpClient()
	if err != nil {
		return nil, "", err
	}
	defer hc.CloseIdleConnections()
	var errs []error
	for _, p := range c.peers {
		ms, err := askMembers(ctx, hc, p, c.timeout)
		if err == nil {
			return ms, p, nil
		}
		errs = append(errs, err)
	}
	return nil, "", errors.Join(errs...)
}

// httpClient reads the certificate files on every round: a renewed Secret
// reaches a joiner that waits long.
func (c *joinConfig) httpClient() (*http.Client, error) {
	t := &http.Transport{DisableKeepAlives: true}
	if c.cert != "" || c.caFile != "" {
		conf := &tls.Config{MinVersion: tls.VersionTLS12}
		if c.cert != "" {
			pair, err := tls.LoadX509KeyPair(c.cert, c.key)
			if err != nil {
				return nil, fmt.Errorf("load the peer certificate: %w", err)
			}
			conf.Certificates = []tls.Certificate{pair}
		}
		if c.caFile != "" {
			pem, err := os.ReadFile(c.caFile)
			if err != nil {
				return nil, fmt.Errorf("read the peer CA: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("no certificate in %s", c.caFile)
			}
			conf.RootCAs = pool
		}
		t.TLSClientConfig = conf
	}
	return &http.Client{Transport: t}, nil
}

func askMembers(ctx context.Context, hc *http.Client, peer string, timeout time.Duration) ([]peerMember, error) {
	u, err := url.JoinPath(peer, "members")
	if err != nil {
		return nil, fmt.Errorf("peer URL %q: %w", peer, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("ask %s: %w", peer, err)
	}
	defer resp.Body.Close()
	// A member list is small; a peer that sends more is not etcd.
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("read %s's answer: %w", peer, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ask %s: %s", peer, resp.Status)
	}
	var ms []peerMember
	if err := json.Unmarshal(body, &ms); err != nil {
		return nil, fmt.Errorf("read %s's member list: %w", peer, err)
	}
	return ms, nil
}

func listed(ms []peerMember, peerURL string) bool {
	return slices.ContainsFunc(ms, func(m peerMember) bool { return slices.Contains(m.PeerURLs, peerURL) })
}

// initialCluster is the --initial-cluster of a member joining a cluster
// whose members are ms: each member by name with each of its peer URLs,
// the joiner under its own name. A member added but not started yet has no
// name in etcd; it is named after its peer URL's host's first label, which
// is its Pod's hostname and member name (any name will do: etcd matches the
// members by peer URL, but the names must differ).
func initialCluster(ms []peerMember, name, peerURL string) string {
	var parts []string
	used := map[string]bool{name: true}
	for _, m := range ms {
		if !slices.Contains(m.PeerURLs, peerURL) && m.Name != "" {
			used[m.Name] = true
		}
	}
	for i, m := range ms {
		n := m.Name
		if slices.Contains(m.PeerURLs, peerURL) {
			n = name
		} else if n == "" && len(m.PeerURLs) > 0 {
			n = hostLabel(m.PeerURLs[0])
			if used[n] {
				n = fmt.Sprintf("unstarted-%d", i)
			}
			used[n] = true
		}
		for _, u := range m.PeerURLs {
			parts = append(parts, n+"="+u)
		}
	}
	return strings.Join(parts, ",")
}

func hostLabel(peerURL string) string {
	u, err := url.Parse(peerURL)
	if err != nil || u.Hostname() == "" {
		return peerURL
	}
	label, _, _ := strings.Cut(u.Hostname(), ".")
	return label
}

// withoutInitialCorruptCheck is args with etcd's initial corruption check
// off (etcd 3.5's flag, the feature gate of 3.6 and later). The check
// compares the member's data with its peers' before the member serves its
// peers: a joiner has no data yet, so there is nothing to compare, and the
// check would only wait. It asks every member in the list, and another
// joiner that starts at the same moment listens but does not answer until
// its own check is over: each waited the request's 7 s timeout for the
// other, and their raft streams as long again. Only this first start goes
// without it: the gate leaves the command line alone once there is data.
func withoutInitialCorruptCheck(args []string) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--experimental-initial-corrupt-check="):
			a = "--experimental-initial-corrupt-check=false"
		case strings.HasPrefix(a, "--feature-gates="):
			gates := strings.Split(strings.TrimPrefix(a, "--feature-gates="), ",")
			for i, g := range gates {
				if strings.HasPrefix(g, "InitialCorruptCheck=") {
					gates[i] = "InitialCorruptCheck=false"
				}
			}
			a = "--feature-gates=" + strings.Join(gates, ",")
		}
		out = append(out, a)
	}
	return out
}

// withInitialCluster is args with --initial-cluster set to ic.
func withInitialCluster(args []string, ic string) []string {
	out := make([]string, 0, len(args)+1)
	for _, a := range args {
		if !strings.HasPrefix(a, "--initial-cluster=") {
			out = append(out, a)
		}
	}
	return append(out, "--initial-cluster="+ic)
}

// NonEmpty says whether dir exists and holds anything.
func NonEmpty(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read %s: %w", dir, err)
	}
	return len(entries) > 0, nil
}
