package compute

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"
)

// peersSim measures the copy matrix of the simulated driver with cfg.
func peersSim(t *testing.T, cfg simConfig, o PeerOptions) (Peers, simStats) {
	t.Helper()
	cu, stats := simDriver(t, cfg)
	return cu.Peers(context.Background(), o), stats()
}

func near(got, want float64) bool { return math.Abs(got-want) <= 0.02*want }

// Four GPUs with peer access: every ordered pair measured at the
// simulated rate, both ways at twice it, and everything the
// measurement turned on, allocated or retained given back.
func TestCUDAPeersSimulated(t *testing.T) {
	cfg := simH100ish()
	cfg.Devices, cfg.PeerBytes, cfg.SlowA, cfg.SlowB = 4, 380e9, 2, 3 // ranks 1 and 2 at a quarter
	o := DefaultPeerOptions()
	p, st := peersSim(t, cfg, o)
	if p.Error != "" || p.Hung != "" || len(p.Pairs) != 12 || p.Devices != 4 {
		t.Fatalf("%+v", p)
	}
	per := float64(o.Bytes) / (float64(o.Bytes)/380e9 + 5e-6) / 1e9
	for _, x := range p.Pairs {
		want := per
		if ranks := (3-x.Src)*(3-x.Dst) == 2; ranks { // CUDA numbers the fake's ranks backwards: ordinals 1 and 2
			want = float64(o.Bytes) / (float64(o.Bytes)/95e9 + 5e-6) / 1e9
		}
		if !x.Access || x.Error != "" || !near(x.GBs, want) || x.SrcBus == "" || x.DstBus == "" {
			t.Errorf("%d->%d: %+v, want %.0f GB/s", x.Src, x.Dst, x, want)
		}
		if (x.Src < x.Dst) != (x.BidirGBs > 0) || (x.BidirGBs > 0 && !near(x.BidirGBs, 2*want)) {
			t.Errorf("%d->%d both ways: %.1f GB/s, want %.1f on the lower ordinal's entry only", x.Src, x.Dst, x.BidirGBs, 2*want)
		}
	}
	if st.BadCalls != 0 || st.LiveAllocs != 0 || st.LiveEvents != 0 || st.CtxRefs != 0 || st.PeersEnabled != 0 || st.WrongThread != 0 {
		t.Errorf("left behind: %+v", st)
	}

	// No peer access: copies are staged through the host.
	cfg.NoPeer, cfg.SlowA, cfg.SlowB = 1, 0, 0
	p, st = peersSim(t, cfg, o)
	if len(p.Pairs) != 12 || p.Pairs[0].Access || !near(p.Pairs[0].GBs, float64(o.Bytes)/(float64(o.Bytes)/25e9+5e-6)/1e9) || st.BadCalls != 0 {
		t.Errorf("no peer access: %+v, %+v", p.Pairs[0], st)
	}

	// One GPU: nothing to measure.
	cfg.Devices = 1
	if p, _ = peersSim(t, cfg, o); p.Devices != 1 || p.Error != "" || len(p.Pairs) != 0 {
		t.Errorf("one GPU: %+v", p)
	}
}

// A pair whose copies never complete fails, within its timeout, and
// nothing waits on it: no event synchronised, no memory freed, no
// context synchronised on its GPU (each would hang a real driver).
func TestCUDAPeersHangingPair(t *testing.T) {
	cfg := simH100ish()
	cfg.Devices, cfg.PeerBytes, cfg.HangA, cfg.HangB = 4, 380e9, 4, 3 // ranks 3 and 2: CUDA ordinals 0 and 1
	o := DefaultPeerOptions()
	o.Timeout = 300 * time.Millisecond
	start := time.Now()
	p, st := peersSim(t, cfg, o)
	// The pair hangs for good: any bound proves the wait was given up,
	// and 10 s holds under qemu-user beside the rest of the suite.
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %s", took)
	}
	if p.Hung == "" || len(p.Pairs) != 1 || !p.Pairs[0].TimedOut || p.Pairs[0].Src != 0 || p.Pairs[0].Dst != 1 {
		t.Fatalf("%+v", p)
	}
	if st.BadCalls != 0 {
		t.Errorf("%d calls a real driver would have hung in", st.BadCalls)
	}
}

// A driver call that does not return at all: the caller stops waiting
// after the pair's timeout and grace, and names what it was doing.
func TestCUDAPeersBlockedCall(t *testing.T) {
	cfg := simH100ish()
	cfg.Devices, cfg.PeerBytes, cfg.HangA, cfg.HangB, cfg.BlockMs = 2, 380e9, 1, 2, 8000
	o := DefaultPeerOptions()
	o.Timeout, o.Grace = 200*time.Millisecond, 300*time.Millisecond
	cu, _ := simDriver(t, cfg)
	start := time.Now()
	p := cu.Peers(context.Background(), o)
	// Well before the blocked call's 8 s: the wait was given up, with
	// room for opening under qemu-user beside the rest of the suite.
	if took := time.Since(start); took > 6*time.Second {
		t.Errorf("took %s, want the 0.5 s of timeout and grace, after the opening", took)
	}
	if p.Hung != "copying from CUDA device 0 to 1" || p.Error == "" {
		t.Errorf("%+v", p)
	}
	time.Sleep(8 * time.Second) // the blocked call ends, and the measuring thread cleans up
}

// A pair whose copy faults: the matrix stops there, naming it, and
// nothing is freed or synchronised on the broken GPU afterwards.
func TestCUDAPeersFaultingPair(t *testing.T) {
	cfg := simH100ish()
	cfg.Devices, cfg.PeerBytes, cfg.FaultA, cfg.FaultB = 3, 380e9, 3, 1 // ranks 2 and 0: CUDA ordinals 0 and 2
	p, st := peersSim(t, cfg, DefaultPeerOptions())
	last := p.Pairs[len(p.Pairs)-1]
	if p.Hung != "" || !strings.Contains(p.Error, "copies from CUDA device 0 to 2 failed; later pairs were not measured") ||
		len(p.Pairs) != 2 || last.Error == "" || last.TimedOut {
		t.Fatalf("%+v", p)
	}
	if st.BadCalls != 0 {
		t.Errorf("%d calls made on the faulted GPU", st.BadCalls)
	}
}
