//go:build !unix

package writeback

// lockFile is a no-op where flock(2) does not exist; the in-process lock
// still serialises writers.
func lockFile(string) (func(), error) {
	return func() {}, nil
}
