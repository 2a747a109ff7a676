package testenv

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// readyzAddrEnv is suite_test.go's: the test binary, run with it, serves
// /readyz there.
const readyzAddrEnv = "TESTENV_SERVE_READYZ"

// TestReadyOrRestart: a process that lost a reserved port is started
// again on a fresh one; one that failed otherwise is not.
func TestReadyOrRestart(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close() //nolint:errcheck // test teardown
	serve := func(addr string) (*Process, error) {
		p, err := startProcess("readyz", os.Args[0], nil, append(os.Environ(), readyzAddrEnv+"="+addr), t.TempDir())
		if err != nil {
			return nil, err
		}
		p.HealthAddr = addr
		return p, nil
	}

	t.Run("lost its port: started again on fresh ports", func(t *testing.T) {
		g := NewWithT(t)
		starts := 0
		start := func() (*Process, error) {
			starts++
			addr := taken.Addr().String()
			if starts > 1 {
				addrs, err := freeAddrs(1)
				if err != nil {
					return nil, err
				}
				addr = addrs[0]
			}
			return serve(addr)
		}
		p, err := start()
		g.Expect(err).NotTo(HaveOccurred())
		p, err = readyOrRestart(context.Background(), time.Minute, p, start)
		g.Expect(err).NotTo(HaveOccurred())
		defer p.Stop(time.Second) //nolint:errcheck // test teardown
		g.Expect(starts).To(Equal(2))
	})

	t.Run("failed otherwise: not started again", func(t *testing.T) {
		g := NewWithT(t)
		starts := 0
		start := func() (*Process, error) {
			starts++
			return serve("not-an-address")
		}
		p, err := start()
		g.Expect(err).NotTo(HaveOccurred())
		p, err = readyOrRestart(context.Background(), time.Minute, p, start)
		g.Expect(err).To(MatchError(ContainSubstring("exited")))
		g.Expect(p.Stop(time.Second)).To(Succeed())
		g.Expect(starts).To(Equal(1))
	})
}
