package run

import "testing"

func TestSchedule(t *testing.T) {
	got := schedule(10, 60, 10)
	want := []tick{{10, false}, {20, true}, {30, true}, {40, true}, {50, true}, {60, true}, {70, true}}
	if len(got) != len(want) {
		t.Fatalf("schedule = %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("schedule[%d] = %v want %v", i, got[i], want[i])
		}
	}
	// ramp-up not a multiple of the interval: a short interval ends it.
	got = schedule(5, 7, 3)
	want = []tick{{3, false}, {5, false}, {8, true}, {11, true}, {12, true}}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("schedule(5,7,3) = %v want %v", got, want)
		}
	}
	if got := schedule(0, 10, 10); len(got) != 1 || got[0] != (tick{10, true}) {
		t.Fatalf("schedule(0,10,10) = %v", got)
	}
}
