// Package probe is what the operator's binary does as "raftsman probe": ask
// HTTP endpoints until each answers 2xx. The chart's `helm test` Pod runs it
// against the operator's /readyz and /healthz through the operator's
// Service, so that the test needs no image but the operator's own (which has
// no shell, curl or wget).
//
//	raftsman probe [--timeout 1m] [--interval 2s] URL...
package probe

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Main runs the probe command with args (after "probe") and returns the
// process's exit code: 0 when every URL answered 2xx in time.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := Run(ctx, args, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		return 1
	}
	return 0
}

// Run asks each URL in turn, again every interval while it fails (a Service
// just created may have no endpoint or DNS record yet), until it answers 2xx
// or the timeout, shared by all URLs, passes. It writes one line per answer.
func Run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	timeout := fs.Duration("timeout", time.Minute, "how long all URLs may take to answer 2xx")
	interval := fs.Duration("interval", 2*time.Second, "how long to wait before asking a failing URL again")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("usage: raftsman probe [--timeout D] [--interval D] URL...")
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c := &http.Client{Timeout: 5 * time.Second}
	for _, url := range fs.Args() {
		if err := untilOK(ctx, c, url, *interval, out); err != nil {
			return err
		}
	}
	return nil
}

func untilOK(ctx context.Context, c *http.Client, url string, interval time.Duration, out io.Writer) error {
	for attempt := 1; ; attempt++ {
		status, err := get(ctx, c, url)
		if err == nil {
			fmt.Fprintf(out, "%s: %s (attempt %d)\n", url, status, attempt)
			return nil
		}
		fmt.Fprintf(out, "%s: %v (attempt %d)\n", url, err, attempt)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer 2xx in time: %w", url, err)
		case <-time.After(interval):
		}
	}
}

// get returns the status of a 2xx answer, or an error.
func get(ctx context.Context, c *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("%s: %q", resp.Status, body)
	}
	return resp.Status, nil
}
