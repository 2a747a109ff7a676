package testenv

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// DumpLogs writes every component's log to w, each under a header. Logs
// longer than maxBytes are cut to their last maxBytes, where the failure
// usually is; maxBytes <= 0 writes them whole.
func (e *Env) DumpLogs(w io.Writer, maxBytes int64) error {
	for _, path := range e.LogPaths() {
		if err := dumpLog(w, path, maxBytes); err != nil {
			return err
		}
	}
	return nil
}

func dumpLog(w io.Writer, path string, maxBytes int64) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening log: %w", err)
	}
	defer f.Close() //nolint:errcheck // read-only
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("reading log: %w", err)
	}
	header := fmt.Sprintf("===== %s (%d bytes) =====\n", filepath.Base(path), info.Size())
	if maxBytes > 0 && info.Size() > maxBytes {
		header = fmt.Sprintf("===== %s (last %d of %d bytes) =====\n", filepath.Base(path), maxBytes, info.Size())
		if _, err := f.Seek(-maxBytes, io.SeekEnd); err != nil {
			return fmt.Errorf("seeking in log: %w", err)
		}
	}
	if _, err := io.WriteString(w, header); err != nil {
		return fmt.Errorf("writing log header: %w", err)
	}
	if _, err := io.Copy(w, f); err != nil {
		return fmt.Errorf("copying log %s: %w", path, err)
	}
	return nil
}

// DumpFiles writes other logs (a reflux run in the test, say) to w as
// DumpLogs writes the components'. A file that does not exist is skipped.
func DumpFiles(w io.Writer, maxBytes int64, paths ...string) error {
	for _, path := range paths {
		if _, err := os.Stat(path); os.IsNotExist(err) {
			continue
		}
		if err := dumpLog(w, path, maxBytes); err != nil {
			return err
		}
	}
	return nil
}
