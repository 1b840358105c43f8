package mariadb_test

import (
	"io"
	"net"
	"sync"
	"testing"
)

// throttle is a loopback TCP relay between a replica and its primary that can stop passing the
// primary's bytes after a budget. It is how a test makes a replica receive only part of an event
// group: the primary writes a group to its binary log at commit, all at once, so nothing else can
// leave a replica holding half of it.
type throttle struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	cond   *sync.Cond
	budget int64 // bytes the primary may still send; negative means no limit
	conns  []net.Conn
	closed bool
}

// newThrottle relays 127.0.0.1:<Port()> to target until t ends.
func newThrottle(t *testing.T, target string) *throttle {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	th := &throttle{ln: ln, target: target, budget: -1}
	th.cond = sync.NewCond(&th.mu)
	go th.accept()
	t.Cleanup(th.close)
	return th
}

func (th *throttle) Port() int { return th.ln.Addr().(*net.TCPAddr).Port }

// Limit lets the primary send at most n more bytes; Unlimit lifts the limit.
func (th *throttle) Limit(n int64) { th.setBudget(n) }
func (th *throttle) Unlimit()      { th.setBudget(-1) }

func (th *throttle) setBudget(n int64) {
	th.mu.Lock()
	th.budget = n
	th.mu.Unlock()
	th.cond.Broadcast()
}

func (th *throttle) accept() {
	for {
		client, err := th.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", th.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		th.mu.Lock()
		th.conns = append(th.conns, client, server)
		th.mu.Unlock()
		go func() {
			_, _ = io.Copy(server, client)
			th.hangUp(client, server)
		}()
		go func() {
			th.copyLimited(client, server)
			th.hangUp(client, server)
		}()
	}
}

// copyLimited passes the primary's bytes to the replica while the budget allows, and holds the rest.
func (th *throttle) copyLimited(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for chunk := buf[:n]; len(chunk) > 0; {
			allowed := th.take(int64(len(chunk)))
			if allowed == 0 {
				return
			}
			if _, werr := dst.Write(chunk[:allowed]); werr != nil {
				return
			}
			chunk = chunk[allowed:]
		}
		if err != nil {
			return
		}
	}
}

// take waits until some of want bytes may pass and returns how many; zero once the relay is closed.
func (th *throttle) take(want int64) int64 {
	th.mu.Lock()
	defer th.mu.Unlock()
	for th.budget == 0 && !th.closed {
		th.cond.Wait()
	}
	switch {
	case th.closed:
		return 0
	case th.budget < 0:
		return want
	}
	n := min(want, th.budget)
	th.budget -= n
	return n
}

func (th *throttle) hangUp(conns ...net.Conn) {
	for _, c := range conns {
		_ = c.Close()
	}
	th.cond.Broadcast()
}

func (th *throttle) close() {
	_ = th.ln.Close()
	th.mu.Lock()
	th.closed = true
	conns := th.conns
	th.mu.Unlock()
	th.hangUp(conns...)
}
