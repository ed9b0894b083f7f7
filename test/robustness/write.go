package robustness

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/anishathalye/porcupine"
)

// Files that Write puts in its folder.
const (
	// VisualizationFile is porcupine's page: every operation on a time line per
	// client, the linearization found or, for an illegal history, the longest
	// partial ones and the operations that could not come next.
	VisualizationFile = "linearizability.html"
	// HistoryFile is the raw history, final read and watch, to check again or
	// to read by hand.
	HistoryFile = "history.json"
	// ResultFile is the verdict with its counts, lost writes and watch violations.
	ResultFile = "result.json"
)

// Write puts the visualization, the raw history and the verdict in dir,
// creating it. Scenarios call it when a check fails, or always when asked to.
func (r *Result) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	raw := struct {
		History *History      `json:"history"`
		Final   *FinalState   `json:"final,omitempty"`
		Watch   *WatchHistory `json:"watch,omitempty"`
	}{r.history, r.final, r.watch}
	errs := []error{
		writeJSON(filepath.Join(dir, HistoryFile), raw),
		writeJSON(filepath.Join(dir, ResultFile), r),
	}
	if r.checked {
		if err := porcupine.VisualizePath(r.model, r.info, filepath.Join(dir, VisualizationFile)); err != nil {
			errs = append(errs, fmt.Errorf("visualize: %w", err))
		}
	}
	return errors.Join(errs...)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", filepath.Base(path), err)
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadHistory loads what Write saved, so a history can be checked again (for
// example with a longer timeout) without running the scenario again.
func ReadHistory(dir string) (*History, *FinalState, *WatchHistory, error) {
	b, err := os.ReadFile(filepath.Join(dir, HistoryFile))
	if err != nil {
		return nil, nil, nil, err
	}
	var raw struct {
		History *History      `json:"history"`
		Final   *FinalState   `json:"final"`
		Watch   *WatchHistory `json:"watch"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, nil, nil, fmt.Errorf("decode %s: %w", HistoryFile, err)
	}
	if raw.History == nil {
		return nil, nil, nil, fmt.Errorf("%s has no history", HistoryFile)
	}
	return raw.History, raw.Final, raw.Watch, nil
}
