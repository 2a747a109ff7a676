package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// onceWarnings runs fn with the process's stderr captured, then prints
// each distinct line to w once. krusty prints its deprecation warnings
// straight to os.Stderr, once per kustomization file it loads
// (api/internal/target/kusttarget.go); a trace loads each file at least
// twice, so the same warning would otherwise repeat (issue 12). Swapping
// os.Stderr is process-wide, which is why only the CLI, one command per
// process, does it.
func onceWarnings(w io.Writer, fn func() error) error {
	r, pw, err := os.Pipe()
	if err != nil {
		return fn()
	}
	saved := os.Stderr
	os.Stderr = pw
	lines := make(chan []string, 1)
	go func() {
		var seen []string
		known := map[string]bool{}
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if l := sc.Text(); !known[l] {
				known[l] = true
				seen = append(seen, l)
			}
		}
		lines <- seen
	}()
	fnErr := fn()
	os.Stderr = saved
	_ = pw.Close()
	seen := <-lines
	_ = r.Close()
	for _, l := range seen {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if _, err := fmt.Fprintln(w, l); err != nil && fnErr == nil {
			return err
		}
	}
	return fnErr
}
