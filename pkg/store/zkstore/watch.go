package zkstore

import (
	"context"
	"time"

	"github.com/beamer-lb/beamer/pkg/store"
)

// Watch implements store.Store. ZooKeeper watches fire once; the loop
// re-arms an exists-watch (which fires on create, change and delete) after
// every event, and after session loss.
func (s *Store) Watch(ctx context.Context, key string) <-chan struct{} {
	ch := make(chan struct{}, 1)
	reconnected, stop := s.onReconnect()
	go func() {
		defer close(ch)
		defer stop()
		pause := store.NewBackoff(100*time.Millisecond, 5*time.Second)
		for ctx.Err() == nil {
			_, _, ev, err := s.conn.ExistsW(key)
			store.Notify(ch)
			if err != nil {
				select {
				case <-s.closed:
					return
				default:
				}
				if !pause.Sleep(ctx) {
					return
				}
				continue
			}
			pause.Reset()
			select {
			case <-ev:
			case <-reconnected:
				// A new session: the old watch may be gone.
			case <-ctx.Done():
				return
			case <-s.closed:
				return
			}
		}
	}()
	return ch
}
