package mysqlwire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// Transport selects how a tpcc-mysql-mode connection waits for the server.
//
// tpcc_start blocks each connection's thread in the kernel until the reply
// arrives, and nothing else in the process wakes up. Go's net package instead
// parks the goroutine and lets the netpoller wake it (an epoll_pwait and often
// a futex wake-up of another thread per round trip); an ordinary blocking
// system call (syscall.Read) keeps the thread but tells the scheduler the
// goroutine is in a system call, and its monitor thread (sysmon) then polls
// every 20 us, takes the processor from any call that lasts 10 ms (a row-lock
// wait) and preempts any goroutine that has not been rescheduled for 10 ms:
// measured at 1 warehouse x 4 connections, 6,400 sysmon wake-ups a second and
// 1.26x tpcc_start's client CPU per transaction. TransportBlocking therefore
// reads and writes a blocking socket with raw system calls (see blockingConn):
// to the scheduler the goroutine is running, so there is nothing to take back
// and sysmon sleeps its full 10 ms. It is tpcc-mysql mode's default;
// docs/tpcc.md has the measurements.
type Transport string

const (
	// TransportNetpoll is Go's usual network I/O (batched mode's transport).
	TransportNetpoll Transport = "netpoll"
	// TransportBlocking is a blocking socket per connection read and written
	// with raw system calls (see Transport; tpcc-mysql mode's default).
	TransportBlocking Transport = "blocking"
)

// BlockingGOMAXPROCS is the GOMAXPROCS a run with blocking sockets needs: a P
// per connection, since a goroutine blocked in a raw read keeps its P, and
// one for longWaits' goroutine, no more: a spare P would be idle, and every
// goroutine made runnable would wake a thread to spin on it. The few other
// goroutines (the reporter, the collector) run whenever a connection yields.
func BlockingGOMAXPROCS(conns int) int {
	return conns + 1
}

// BlockingGCPercent is the collector's target (GOGC) for a run of either
// tpcc-mysql-mode client (one blocked thread per connection). The live heap
// is a few MiB, so the default 100 collects about once a second at 64
// connections; each collection stops and signals every connection's thread
// and runs a quarter of GOMAXPROCS mark workers, all on the host's CPUs that
// the server needs. At 800 the heap goal is ~45 MiB and a collection comes
// every few seconds (1 W x 64, 3 pairs: client CPU per transaction
// 0.93-1.08x tpcc_start's against 1.15-1.20x at the default).
const BlockingGCPercent = 800

// signalTimeout is the receive and send timeout of a blocking connection.
// No reply is ever waited for this long (a timeout only makes the call
// again); it is set because a socket call with a timeout returns EINTR when
// a signal arrives, while one without is restarted by the kernel (signal(7)),
// which would leave the Go runtime's preemption signal unanswered.
var signalTimeout = syscall.Timeval{Sec: 3600}

// dialBlocking connects like net.Dialer, then swaps the connection for a
// blocking duplicate of its socket.
func dialBlocking(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	defer c.Close() // the duplicate keeps the socket open
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("blocking transport: %T has no file descriptor", c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("blocking transport: %w", err)
	}
	nfd, dupErr := -1, error(nil)
	if err := raw.Control(func(fd uintptr) { nfd, dupErr = syscall.Dup(int(fd)) }); err != nil {
		return nil, fmt.Errorf("blocking transport: %w", err)
	}
	if dupErr != nil {
		return nil, fmt.Errorf("blocking transport: dup: %w", dupErr)
	}
	bc, err := newBlockingConn(nfd, c.LocalAddr(), c.RemoteAddr())
	if err != nil {
		syscall.Close(nfd)
		return nil, fmt.Errorf("blocking transport: %w", err)
	}
	return bc, nil
}

// newBlockingConn makes fd, a connected stream socket, a blockingConn: out
// of non-blocking mode (a duplicate shares the file status flags of the
// socket it came from; the netpoller never sees it) and with the timeouts
// that let signals interrupt its calls (signalTimeout).
func newBlockingConn(fd int, local, remote net.Addr) (*blockingConn, error) {
	if err := syscall.SetNonblock(fd, false); err != nil {
		return nil, err
	}
	for _, opt := range []int{syscall.SO_RCVTIMEO, syscall.SO_SNDTIMEO} {
		if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, opt, &signalTimeout); err != nil {
			return nil, fmt.Errorf("socket timeout: %w", err)
		}
	}
	return &blockingConn{fd: fd, local: local, remote: remote, readable: make(chan struct{}, 1)}, nil
}

// blockingConn is a net.Conn over a blocking socket descriptor, read and
// written with raw system calls (syscall.RawSyscall6): the runtime is not
// told the goroutine entered a system call, so it neither hands its P to
// another thread nor wakes sysmon to watch it — one recvfrom and one sendto
// per round trip, the kernel waking the thread when the reply arrives, as
// tpcc_start's threads are woken.
//
// The runtime still has to be able to stop this goroutine: to collect
// garbage, and when it has run for 10 ms without being rescheduled. It asks
// with a signal to the thread; because the socket has timeouts
// (signalTimeout) the interrupted call returns EINTR instead of being
// restarted, and Read and Write then yield (runtime.Gosched) — the safe
// point the runtime waits for — before calling again. A read interrupted
// after waiting longWait or more is waiting on the server (a row lock) and
// would be signalled again every 10-20 ms: it parks in longWaits instead.
// Deadlines are not supported (the driver sets none: tpcc sets no
// read/write timeout).
type blockingConn struct {
	fd            int
	local, remote net.Addr
	// readable wakes a read parked in longWaits; registered says its socket
	// is in longWaits' epoll set.
	readable   chan struct{}
	registered bool
}

// longWait is how long a read must have waited for an interruption to hand
// it to longWaits; a shorter one is a busy connection preempted, or a
// collection, and simply yields and reads again.
const longWait = 5 * time.Millisecond

var errClosed = errors.New("use of closed blocking connection")

// Read is one recvfrom(2) that blocks until the reply arrives.
func (c *blockingConn) Read(b []byte) (int, error) {
	if c.fd < 0 {
		return 0, errClosed
	}
	if len(b) == 0 {
		return 0, nil
	}
	start := time.Now()
	for {
		n, _, errno := syscall.RawSyscall6(syscall.SYS_RECVFROM, uintptr(c.fd),
			uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), 0, 0, 0)
		switch errno {
		case 0:
			if n == 0 {
				return 0, io.EOF
			}
			return int(n), nil
		case syscall.EINTR: // a runtime signal: this read has waited 10 ms, or a collection
			if time.Since(start) < longWait {
				runtime.Gosched()
				continue
			}
			w, err := theLongWaits()
			if err != nil {
				return 0, err
			}
			if err := w.wait(c); err != nil {
				return 0, err
			}
		case syscall.EAGAIN: // signalTimeout passed
			runtime.Gosched()
		default:
			return 0, &net.OpError{Op: "read", Net: c.remote.Network(), Addr: c.remote, Err: errno}
		}
	}
}

// Write writes all of b with sendto(2).
func (c *blockingConn) Write(b []byte) (int, error) {
	if c.fd < 0 {
		return 0, errClosed
	}
	done := 0
	for done < len(b) {
		n, _, errno := syscall.RawSyscall6(syscall.SYS_SENDTO, uintptr(c.fd),
			uintptr(unsafe.Pointer(&b[done])), uintptr(len(b)-done), syscall.MSG_NOSIGNAL, 0, 0)
		switch errno {
		case 0:
			done += int(n)
		case syscall.EINTR, syscall.EAGAIN:
			runtime.Gosched()
		default:
			return done, &net.OpError{Op: "write", Net: c.remote.Network(), Addr: c.remote, Err: errno}
		}
	}
	return done, nil
}

// Close closes the descriptor once.
func (c *blockingConn) Close() error {
	if c.fd < 0 {
		return nil
	}
	if c.registered {
		waits.forget(c)
	}
	err := syscall.Close(c.fd)
	c.fd = -1
	return err
}

func (c *blockingConn) LocalAddr() net.Addr  { return c.local }
func (c *blockingConn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline and friends accept only "no deadline".
func (c *blockingConn) SetDeadline(t time.Time) error      { return noDeadline(t) }
func (c *blockingConn) SetReadDeadline(t time.Time) error  { return noDeadline(t) }
func (c *blockingConn) SetWriteDeadline(t time.Time) error { return noDeadline(t) }

func noDeadline(t time.Time) error {
	if t.IsZero() {
		return nil
	}
	return errors.New("blocking transport: deadlines are not supported")
}
