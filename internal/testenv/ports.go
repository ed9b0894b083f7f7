package testenv

import (
	"net"
	"testing"
)

// FreePorts returns n distinct free TCP ports on 127.0.0.1: every listener
// is held until all are chosen.
func FreePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}
