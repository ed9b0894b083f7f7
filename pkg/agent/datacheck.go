package agent

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/raftsman/raftsman/pkg/gate"
)

// Reasons of check-data's failures.
const (
	// ReasonDataLost: the member ran before, and its data directory is
	// empty now (a volume recreated empty, a tmpfs wiped under its Pod).
	ReasonDataLost = "DataLost"
	// ReasonForeignData: the volume holds another member's data.
	ReasonForeignData = "ForeignData"
)

// Marker is what check-data writes next to a member's data directory the
// first time the member starts, and compares with the member on every
// later start.
type Marker struct {
	Member string `json:"member"`
	UID    string `json:"uid"`
}

// checkData runs before etcd in every member Pod: etcd must never start
// under a member's identity without that member's data. A member that
// joined the cluster and then starts on an empty data directory would be a
// voter without its log; it could help elect a leader that lacks
// acknowledged writes. So:
//   - a marker (member name and UID) is written next to the data
//     directory at the member's first start;
//   - a marker of another member: refused (ForeignData);
//   - a marker of this member with no data directory: refused (DataLost);
//   - no marker: the first Pod of the member writes one; a later Pod
//     writes one only over data it finds (a member made before markers
//     existed), and refuses an empty directory (DataLost).
//
// A refusal exits non-zero with the reason in the termination message;
// the member controller reports the member lost and the cluster controller
// replaces it.
func checkData(_ context.Context, args []string, res *Result) error {
	f := flag.NewFlagSet("check-data", flag.ContinueOnError)
	dataDir := f.String("data-dir", "", "etcd's data directory")
	markerPath := f.String("marker", "", "the marker file; on the member's volume, or on a disk volume of the Pod for a tmpfs member")
	member := f.String("member", "", "the member's name")
	uid := f.String("uid", "", "the EtcdMember's UID")
	first := f.Bool("first-pod", false, "the member's first Pod: no data is expected yet")
	installTo := f.String("install-to", "", "once the data is checked, copy the gate there (pkg/gate: it starts the etcd of a joining or resuming member)")
	if err := f.Parse(args); err != nil {
		return err
	}
	if *dataDir == "" || *markerPath == "" || *member == "" || *uid == "" {
		return errors.New("--data-dir, --marker, --member and --uid are required")
	}
	res.Member = *member
	if err := verifyData(*dataDir, *markerPath, Marker{Member: *member, UID: *uid}, *first); err != nil {
		return err
	}
	if *installTo != "" {
		return installGate(*installTo)
	}
	return nil
}

func verifyData(dataDir, markerPath string, want Marker, first bool) error {
	hasData, err := gate.NonEmpty(filepath.Join(dataDir, "member"))
	if err != nil {
		return err
	}
	have, found, err := readMarker(markerPath)
	if err != nil {
		return err
	}
	switch {
	case found && have != want:
		return failure{ReasonForeignData, fmt.Errorf("the volume holds the data of member %s (UID %s), not of %s (UID %s)", have.Member, have.UID, want.Member, want.UID)}
	case found && !hasData:
		return failure{ReasonDataLost, fmt.Errorf("member %s ran before but its data directory %s is empty: it must not start without its data, and is replaced", want.Member, dataDir)}
	case found:
		return nil
	case !first && !hasData:
		return failure{ReasonDataLost, fmt.Errorf("member %s ran before (this is not its first Pod) but its data directory %s is empty: it must not start without its data, and is replaced", want.Member, dataDir)}
	}
	return writeMarker(markerPath, want)
}

func readMarker(path string) (Marker, bool, error) {
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Marker{}, false, nil
	case err != nil:
		return Marker{}, false, fmt.Errorf("read the marker %s: %w", path, err)
	}
	var m Marker
	if err := json.Unmarshal(b, &m); err != nil {
		return Marker{}, false, failure{ReasonForeignData, fmt.Errorf("the marker %s is not one this operator wrote: %w", path, err)}
	}
	return m, true, nil
}

// writeMarker writes the marker through a temporary file and a rename, so
// that a crash leaves either no marker or a whole one.
func writeMarker(path string, m Marker) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create the marker's folder: %w", err)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write the marker: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("write the marker: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync the marker: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write the marker: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write the marker: %w", err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}
