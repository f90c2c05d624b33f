package mysqlwire

import (
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"unsafe"
)

// longWaits hands the reads that wait long to one goroutine blocked in
// epoll_wait, so that each waits without a thread of its own being signalled.
//
// A connection blocked in a raw read (blockingConn) holds its P, and the Go
// runtime signals any goroutine that has held its P for 10 ms without being
// rescheduled: under row-lock contention (64 connections on one warehouse,
// about 200 ms of lock waits per New-Order) that is a signal every 10-20 ms to
// every waiting thread, each waking it to wait again (3,000 a second, 8 % of
// the client's CPU). When a read is interrupted that way it has waited long
// already; the connection then registers its socket here and parks, giving
// its P back, and this goroutine wakes it when the socket is readable: two
// wake-ups per long wait instead of one per 10-20 ms of it. Its own thread
// blocks in a raw epoll_wait too (one thread, at most one signal per 10 ms).
type longWaits struct {
	epfd  int
	mu    sync.Mutex
	conns map[int32]*blockingConn // registered sockets by descriptor
}

var (
	waitsOnce sync.Once
	waits     *longWaits
	waitsErr  error
)

// theLongWaits starts the waiter on first use.
func theLongWaits() (*longWaits, error) {
	waitsOnce.Do(func() {
		fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			waitsErr = fmt.Errorf("blocking transport: epoll: %w", err)
			return
		}
		waits = &longWaits{epfd: fd, conns: map[int32]*blockingConn{}}
		go waits.loop()
	})
	return waits, waitsErr
}

// wait parks the calling connection until its socket is readable (or closed).
func (w *longWaits) wait(c *blockingConn) error {
	// Level-triggered and one-shot: a reply that arrived before the arming is
	// reported at once, and each arming reports once.
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(c.fd)}
	op := syscall.EPOLL_CTL_MOD
	if !c.registered {
		w.mu.Lock()
		w.conns[int32(c.fd)] = c
		w.mu.Unlock()
		op = syscall.EPOLL_CTL_ADD
		c.registered = true
	}
	if err := syscall.EpollCtl(w.epfd, op, c.fd, &ev); err != nil {
		return fmt.Errorf("blocking transport: epoll_ctl: %w", err)
	}
	<-c.readable
	return nil
}

// forget removes a connection's socket before it is closed.
func (w *longWaits) forget(c *blockingConn) {
	syscall.EpollCtl(w.epfd, syscall.EPOLL_CTL_DEL, c.fd, nil)
	w.mu.Lock()
	delete(w.conns, int32(c.fd))
	w.mu.Unlock()
}

// loop wakes the connection of every readable socket. Raw epoll_wait, like
// the connections' reads: to the scheduler this goroutine is running, so no
// P is taken back from it while it waits (see blockingConn).
func (w *longWaits) loop() {
	events := make([]syscall.EpollEvent, 128)
	for {
		n, _, errno := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(w.epfd),
			uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), ^uintptr(0), 0, 0)
		if errno == syscall.EINTR {
			runtime.Gosched()
			continue
		}
		if errno != 0 {
			panic(fmt.Sprintf("blocking transport: epoll_wait: %v", errno))
		}
		w.mu.Lock()
		for _, ev := range events[:n] {
			if c := w.conns[ev.Fd]; c != nil {
				select {
				case c.readable <- struct{}{}:
				default:
				}
			}
		}
		w.mu.Unlock()
	}
}
