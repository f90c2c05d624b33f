package mysqlwire

import (
	"bytes"
	"errors"
	"io"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// socketPair is a blockingConn and the raw descriptor of its peer.
func socketPair(t *testing.T) (*blockingConn, int) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	addr := &net.UnixAddr{Name: "pair", Net: "unix"}
	c, err := newBlockingConn(fds[0], addr, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); syscall.Close(fds[1]) })
	return c, fds[1]
}

// readInBackground reads once from c in a goroutine: reading is closed just
// before the read, got receives what it read or its error.
func readInBackground(c *blockingConn) (reading <-chan struct{}, got <-chan string) {
	started, result := make(chan struct{}), make(chan string, 1)
	go func() {
		close(started)
		buf := make([]byte, 16)
		n, err := c.Read(buf)
		if err != nil {
			result <- "error: " + err.Error()
			return
		}
		result <- string(buf[:n])
	}()
	return started, result
}

// A connection blocked in Read holds its thread and, to the scheduler, its
// P. With a single P the rest of the program runs only if the runtime's
// preemption signal interrupts the read and the read yields; a garbage
// collection needs the same. If the socket had no timeout the kernel would
// restart the read after the signal and this test would never finish.
func TestABlockedReadYieldsToTheRestOfTheProgram(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	c, peer := socketPair(t)
	reading, got := readInBackground(c)
	<-reading
	time.Sleep(50 * time.Millisecond) // the reader is now blocked in recvfrom, holding the only P
	runtime.GC()                      // stops the world: the reader must reach a safe point
	if _, err := syscall.Write(peer, []byte("reply")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "reply" {
		t.Fatalf("read %q, want %q", s, "reply")
	}
}

func TestBlockingConnReadsWritesAndEnds(t *testing.T) {
	c, peer := socketPair(t)
	// Larger than the socket buffers: sendto writes it in parts.
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	received := make(chan []byte, 1)
	go func() {
		var all []byte
		buf := make([]byte, 64<<10)
		for len(all) < len(big) {
			n, err := syscall.Read(peer, buf)
			if err != nil || n == 0 {
				break
			}
			all = append(all, buf[:n]...)
		}
		received <- all
	}()
	if n, err := c.Write(big); err != nil || n != len(big) {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(big))
	}
	if all := <-received; !bytes.Equal(all, big) {
		t.Fatalf("the peer received %d bytes, not the %d written", len(all), len(big))
	}

	if _, err := syscall.Write(peer, []byte("ok")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "ok" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	if n, err := c.Read(buf[:0]); n != 0 || err != nil {
		t.Fatalf("an empty Read = %d, %v", n, err)
	}

	if err := syscall.Shutdown(peer, syscall.SHUT_RDWR); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(buf); err != io.EOF {
		t.Fatalf("Read after the peer closed = %v, want io.EOF", err)
	}
	// A write to a closed peer is an error, not a SIGPIPE (MSG_NOSIGNAL).
	if _, err := c.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Write after the peer closed = %v, want EPIPE", err)
	}
	c.Close()
	if _, err := c.Read(buf); err != errClosed {
		t.Fatalf("Read after Close = %v, want errClosed", err)
	}
}

// A read that waits long is interrupted by the runtime and handed to
// longWaits; it still returns the reply, and Close takes its socket out.
func TestALongReadParksInLongWaitsAndStillGetsItsReply(t *testing.T) {
	w, err := theLongWaits()
	if err != nil {
		t.Fatal(err)
	}
	c, peer := socketPair(t)
	fd := int32(c.fd)
	_, got := readInBackground(c)
	registered := func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.conns[fd] == c
	}
	// The runtime signals a goroutine that has held its P for 10 ms; the
	// read, having waited longer than longWait, then parks in longWaits.
	for !registered() {
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := syscall.Write(peer, []byte("late")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "late" {
		t.Fatalf("read %q, want %q", s, "late")
	}
	c.Close()
	w.mu.Lock()
	_, still := w.conns[fd]
	w.mu.Unlock()
	if still {
		t.Fatal("a closed connection is still in longWaits")
	}
}
