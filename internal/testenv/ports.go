package testenv

import (
	"fmt"
	"net"
)

// freeAddrs reserves n distinct loopback ports. They are held open together
// until all are chosen, so the kernel cannot hand out the same one twice.
func freeAddrs(n int) ([]string, error) {
	listeners := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range listeners {
			_ = l.Close() // only reserving; a close error changes nothing
		}
	}()
	addrs := make([]string, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserving a loopback port: %w", err)
		}
		listeners = append(listeners, l)
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}
