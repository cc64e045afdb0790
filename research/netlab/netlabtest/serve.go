package netlabtest

import (
	"net"
	"sync"
	"testing"
)

// Serve accepts connections on l until the test ends and runs handle for
// each in its own goroutine. At cleanup it closes the listener and every
// accepted connection, then waits for the handlers, so no goroutine of a
// test outlives it (and a namespace can be removed under no open socket).
func Serve(t testing.TB, l net.Listener, handle func(net.Conn)) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
}
