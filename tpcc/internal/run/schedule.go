package run

// tick is one reporting boundary, in seconds from the run start.
type tick struct {
	at      int
	measure bool // the interval ending here belongs to the measurement phase
}

// schedule returns the interval boundaries: every -i seconds during ramp-up,
// a boundary exactly at the end of ramp-up (so no interval mixes phases),
// then every -i seconds of measurement, the last one at rampup+measure.
func schedule(rampup, measure, interval int) []tick {
	var ts []tick
	for t := interval; t < rampup; t += interval {
		ts = append(ts, tick{at: t})
	}
	if rampup > 0 {
		ts = append(ts, tick{at: rampup})
	}
	for t := interval; t < measure; t += interval {
		ts = append(ts, tick{at: rampup + t, measure: true})
	}
	ts = append(ts, tick{at: rampup + measure, measure: true})
	return ts
}
