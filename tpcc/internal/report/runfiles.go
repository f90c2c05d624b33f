package report

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// RunFiles are tpcc_start's optional per-New-Order files: -f (report file,
// "<seconds reported so far> <response ms>" for every completed New-Order,
// 0 during ramp-up) and -t (trx file, the wall-clock start and finish of
// every committed one).
type RunFiles struct {
	mu          sync.Mutex
	report, trx *bufio.Writer
	fr, ft      *os.File
	timeCount   atomic.Int64
	buf         []byte
}

// OpenRunFiles creates the files that are named ("" for none).
func OpenRunFiles(report, trx string) (*RunFiles, error) {
	f := &RunFiles{}
	var err error
	if report != "" {
		if f.fr, err = os.Create(report); err != nil {
			return nil, fmt.Errorf("-f report file: %w", err)
		}
		f.report = bufio.NewWriterSize(f.fr, 64<<10)
	}
	if trx != "" {
		if f.ft, err = os.Create(trx); err != nil {
			f.Close()
			return nil, fmt.Errorf("-t transaction file: %w", err)
		}
		f.trx = bufio.NewWriterSize(f.ft, 64<<10)
	}
	return f, nil
}

// NewOrder records one completed New-Order of connection conn.
func (f *RunFiles) NewOrder(conn int, start time.Time, rt time.Duration, rolledBack bool) {
	if f.report == nil && f.trx == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.report != nil {
		b := strconv.AppendInt(f.buf[:0], f.timeCount.Load(), 10)
		b = append(b, ' ')
		b = strconv.AppendFloat(b, float64(rt)/float64(time.Millisecond), 'f', 3, 64)
		f.buf = append(b, '\n')
		f.report.Write(f.buf)
	}
	if f.trx != nil && !rolledBack {
		end := start.Add(rt)
		fmt.Fprintf(f.trx, "t_num: %d finish: %d %d start: %d %d\n", conn, end.Unix(), end.Nanosecond(), start.Unix(), start.Nanosecond())
	}
}

// Close flushes and closes the files.
func (f *RunFiles) Close() {
	for _, w := range []*bufio.Writer{f.report, f.trx} {
		if w != nil {
			w.Flush()
		}
	}
	for _, fh := range []*os.File{f.fr, f.ft} {
		if fh != nil {
			fh.Close()
		}
	}
}

// SetMeasuredSeconds sets the "seconds reported so far" the -f file prints
// (tpcc_start's time count), at each measurement boundary.
func (f *RunFiles) SetMeasuredSeconds(s int) { f.timeCount.Store(int64(s)) }
