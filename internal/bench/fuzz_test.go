package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gpurent/gpurent/internal/probe"
	"github.com/gpurent/gpurent/internal/report"
	"github.com/gpurent/gpurent/internal/specs"
)

// FuzzJudge judges any facts a file could hold: `bench --replay` reads a
// file the user passes, perhaps edited by hand or written by another
// version, and the judgement must neither panic nor write a report that
// JSON cannot hold (a NaN from a zero divisor) or that contradicts itself.
// The seeds are the fixtures, so the fuzzer starts from every check's path.
func FuzzJudge(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join("testdata", "fixtures", "*.json"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no fixtures: %v", err)
	}
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "")
		f.Add(b, "H100 SXM")
	}
	tab, err := specs.Load()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, expect string) {
		var facts probe.Facts
		if json.Unmarshal(data, &facts) != nil {
			return
		}
		r, err := Judge(facts, tab, Order{GPU: expect, GPUs: 1, CPUs: 8, RAM: 64e9, Disk: 100e9, CUDA: "12.8"}, DefaultLimits())
		if err != nil {
			if expect == "" {
				t.Fatalf("judging without an order: %v", err)
			}
			return // an order the table does not know: a usage error
		}
		if r.Verdict != Verdict(r.Checks) {
			t.Errorf("verdict %s, its checks say %s", r.Verdict, Verdict(r.Checks))
		}
		seen := map[string]bool{}
		for _, c := range r.Checks {
			switch c.Status {
			case Pass, Skip:
			case Warn, Fail:
				if c.Advice == "" {
					t.Errorf("%s is %s without advice", c.ID, c.Status)
				}
			default:
				t.Errorf("%s: status %q", c.ID, c.Status)
			}
			if c.ID == "" || c.Evidence == "" {
				t.Errorf("check %+v lacks an id or evidence", c)
			}
			if seen[c.ID] {
				t.Errorf("check %s twice", c.ID)
			}
			seen[c.ID] = true
		}
		if err := report.WriteJSON(io.Discard, r); err != nil {
			t.Errorf("the report cannot be written as JSON: %v", err)
		}
		if err := report.WriteJSON(io.Discard, r.Entry()); err != nil {
			t.Errorf("the history entry cannot be written as JSON: %v", err)
		}
	})
}

// FuzzJudgeFields changes the fixtures' values field by field, which
// FuzzJudge's byte mutations seldom reach through JSON's syntax: each
// number, flag, string and optional field of the facts is kept, removed or
// zeroed, set to an extreme or to a value drawn from the input, and each
// list is kept, emptied or cut. Zero watts, a negative count, a GPU with no
// memory figure or a probe with no repetitions must give checks, not a
// panic or a NaN.
func FuzzJudgeFields(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join("testdata", "fixtures", "*.json"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no fixtures: %v", err)
	}
	var seeds []probe.Facts
	for i, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		var facts probe.Facts
		if err := json.Unmarshal(b, &facts); err != nil {
			f.Fatalf("%s: %v", path, err)
		}
		seeds = append(seeds, facts)
		f.Add(uint8(i), uint16(0), []byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
		f.Add(uint8(i), uint16(40), []byte{2, 3, 0, 2, 255, 3, 1, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 3})
		f.Add(uint8(i), uint16(120), []byte{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3})
	}
	tab, err := specs.Load()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, seed uint8, skip uint16, stream []byte) {
		// Round-trip through JSON for a deep copy the mutation may change.
		b, _ := json.Marshal(seeds[int(seed)%len(seeds)])
		var facts probe.Facts
		if err := json.Unmarshal(b, &facts); err != nil {
			t.Fatal(err)
		}
		m := &mutator{in: stream, skip: int(skip)}
		m.walk(reflect.ValueOf(&facts).Elem())
		for _, order := range []Order{{}, {GPU: "H100 SXM", GPUs: 2, CPUs: 8, RAM: 64e9, Disk: 100e9, CUDA: "13.0"}} {
			r, err := Judge(facts, tab, order, DefaultLimits())
			if err != nil {
				t.Fatal(err)
			}
			if r.Verdict != Verdict(r.Checks) {
				t.Errorf("verdict %s, its checks say %s", r.Verdict, Verdict(r.Checks))
			}
			for _, c := range r.Checks {
				if (c.Status == Warn || c.Status == Fail) && c.Advice == "" {
					t.Errorf("%s is %s without advice", c.ID, c.Status)
				}
				if c.Evidence == "" {
					t.Errorf("%s has no evidence", c.ID)
				}
				if s := fmt.Sprint(c.Measured, " ", c.Expected, " ", c.Evidence); strings.Contains(s, "NaN") || strings.Contains(s, "Inf") {
					t.Errorf("%s: %s", c.ID, s)
				}
			}
			if err := report.WriteJSON(io.Discard, r); err != nil {
				t.Errorf("the report cannot be written as JSON: %v", err)
			}
		}
	})
}

// mutator rewrites exported fields in the order reflection visits them,
// one input byte a decision, after keeping the first skip decisions' fields
// as they are (so that a short input reaches the host's facts as well as
// the first GPU's); an input that runs out leaves the rest as it is.
type mutator struct {
	in   []byte
	skip int
}

// next is the next decision; 0 keeps a field as it is.
func (m *mutator) next() (byte, bool) {
	if m.skip > 0 {
		m.skip--
		return 0, true
	}
	if len(m.in) == 0 {
		return 0, false
	}
	b := m.in[0]
	m.in = m.in[1:]
	return b, true
}

// value is a number drawn from the next bytes: small ones often, since
// thresholds sit near them, and the extremes of each kind through choice 3.
func (m *mutator) value() int64 {
	b, _ := m.next()
	switch b % 4 {
	case 0:
		return int64(int8(b))
	case 1:
		c, _ := m.next()
		return int64(b)<<8 | int64(c)
	case 2:
		return math.MaxInt32 * int64(b)
	default:
		return -int64(b)
	}
}

func (m *mutator) walk(v reflect.Value) {
	if len(m.in) == 0 && m.skip == 0 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		b, _ := m.next()
		switch {
		case b%5 == 1:
			v.SetZero()
			return
		case v.IsNil() && b%5 == 2:
			v.Set(reflect.New(v.Type().Elem()))
		}
		if !v.IsNil() {
			m.walk(v.Elem())
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			if b, _ := m.next(); b%4 == 1 {
				v.SetZero()
			}
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				m.walk(v.Field(i))
			}
		}
	case reflect.Slice:
		b, _ := m.next()
		switch b % 4 {
		case 1:
			v.SetLen(0)
		case 2:
			if v.Len() > 0 {
				v.SetLen(int(b) % v.Len())
			}
		}
		for i := range v.Len() {
			m.walk(v.Index(i))
		}
	case reflect.Bool:
		if b, ok := m.next(); ok && b%3 == 1 {
			v.SetBool(!v.Bool())
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b, _ := m.next()
		switch b % 4 {
		case 1:
			v.SetInt(0)
		case 2:
			if x := m.value(); !v.OverflowInt(x) {
				v.SetInt(x)
			}
		case 3:
			v.SetInt(-1)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		b, _ := m.next()
		switch b % 4 {
		case 1:
			v.SetUint(0)
		case 2:
			if x := uint64(m.value()); !v.OverflowUint(x) {
				v.SetUint(x)
			}
		case 3:
			v.SetUint(math.MaxUint64 >> (64 - v.Type().Bits()))
		}
	case reflect.Float32, reflect.Float64:
		b, _ := m.next()
		switch b % 4 {
		case 1:
			v.SetFloat(0)
		case 2:
			v.SetFloat(float64(m.value()) / 16)
		case 3:
			v.SetFloat(-v.Float())
		}
	case reflect.String:
		b, _ := m.next()
		switch b % 4 {
		case 1:
			v.SetString("")
		case 2:
			v.SetString(strings.Repeat("x", int(b)%5))
		}
	}
}
