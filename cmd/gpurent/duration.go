package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/gpurent/gpurent/internal/units"
)

// durationValue is a duration flag that reads what the config files and
// catalogs read (units.ParseDuration): days too, so --stall 1d works as
// stall: 1d does, and never a negative time.
type durationValue struct{ p *time.Duration }

func (d durationValue) String() string { return units.FormatDuration(*d.p) }
func (d durationValue) Type() string   { return "duration" }

func (d durationValue) Set(s string) error {
	v, err := units.ParseDuration(s)
	if err != nil {
		return err
	}
	*d.p = v
	return nil
}

// durationVar defines a duration flag, as pflag's DurationVar does, with
// durationValue's syntax.
func durationVar(fs *pflag.FlagSet, p *time.Duration, name string, value time.Duration, usage string) {
	*p = value
	fs.Var(durationValue{p}, name, usage)
}
