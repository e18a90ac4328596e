// Package mutate changes a value's fields as a fuzz test's input directs,
// for judgements of recorded facts (bench's, audit's): byte mutations of a
// JSON file seldom get through JSON's syntax to the numbers, flags and
// optional fields the judgement reads, while a stream of decisions, one a
// field, reaches each of them. Only tests import it.
package mutate

import (
	"math"
	"reflect"
	"strings"
	"time"
)

// Fields rewrites the exported fields reachable from ptr, a pointer to a
// struct, in the order reflection visits them, one byte of in a decision:
// each number, flag, string and optional field is kept, removed or zeroed,
// set to an extreme or to a value drawn from in, and each list kept,
// emptied or cut. The first skip decisions keep their fields, so that a
// short input reaches fields late in a big struct; an input that runs out
// leaves the rest as it is.
func Fields(ptr any, skip int, in []byte) {
	m := &mutator{in: in, skip: skip}
	m.walk(reflect.ValueOf(ptr).Elem())
}

// mutator is one pass of Fields over a value.
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
