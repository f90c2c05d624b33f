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
)

// Transport selects how a tpcc-mysql-mode connection waits for the server.
//
// tpcc_start blocks each connection's thread in the kernel until the reply
// arrives. Go's net package instead parks the goroutine and lets the
// netpoller wake it, which per round trip adds an epoll_pwait, often a futex
// wake-up of another thread, and leaves all connections to GOMAXPROCS
// threads. On a CPU-saturated host (2 vCPUs shared with the server) that
// lengthens the time from the server's reply to the next statement (the
// turnaround; 250-380 us against tpcc_start's 60-110 us at 1 warehouse and
// 64 connections), every transaction holds its row locks longer, and TpmC
// falls (0.73x tpcc_start's there). TransportBlocking reads and writes a
// blocking socket directly, one read and one write per round trip in the
// goroutine's own thread, which the kernel wakes like tpcc_start's (turnaround
// 125-170 us, TpmC 0.90-0.96x). It is tpcc-mysql mode's default;
// docs/tpcc.md has the measurements.
type Transport string

const (
	// TransportNetpoll is Go's usual network I/O (batched mode's transport).
	TransportNetpoll Transport = "netpoll"
	// TransportBlocking is a blocking socket per connection (see Transport;
	// tpcc-mysql mode's default).
	TransportBlocking Transport = "blocking"
)

// BlockingGOMAXPROCS is the GOMAXPROCS a run with blocking sockets needs:
// at least one P per connection plus two. A goroutine blocked in a read
// keeps its P; with idle Ps left, the runtime's sysmon does not take the P
// away (which would cost a hand-off to another thread on every round trip);
// an idle P costs nothing.
func BlockingGOMAXPROCS(conns int) int {
	return max(runtime.NumCPU(), conns+2)
}

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
	// The duplicate shares the socket's file status flags: take it out of
	// non-blocking mode (the netpoller never sees it).
	if err := syscall.SetNonblock(nfd, false); err != nil {
		syscall.Close(nfd)
		return nil, fmt.Errorf("blocking transport: %w", err)
	}
	return &blockingConn{fd: nfd, local: c.LocalAddr(), remote: c.RemoteAddr()}, nil
}

// blockingConn is a net.Conn over a blocking socket descriptor. Deadlines
// are not supported (the driver sets none: tpcc sets no read/write timeout).
type blockingConn struct {
	fd            int
	local, remote net.Addr
}

var errClosed = errors.New("use of closed blocking connection")

// Read is one read(2); syscall.Read tells the runtime the thread may block,
// so a garbage collection never waits for it.
func (c *blockingConn) Read(b []byte) (int, error) {
	if c.fd < 0 {
		return 0, errClosed
	}
	for {
		n, err := syscall.Read(c.fd, b)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, &net.OpError{Op: "read", Net: c.remote.Network(), Addr: c.remote, Err: err}
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// Write writes all of b.
func (c *blockingConn) Write(b []byte) (int, error) {
	if c.fd < 0 {
		return 0, errClosed
	}
	done := 0
	for done < len(b) {
		n, err := syscall.Write(c.fd, b[done:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return done, &net.OpError{Op: "write", Net: c.remote.Network(), Addr: c.remote, Err: err}
		}
		done += n
	}
	return done, nil
}

// Close closes the descriptor once.
func (c *blockingConn) Close() error {
	if c.fd < 0 {
		return nil
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
