package flagenv

import (
	"errors"
	"flag"
	"time"
)

// ErrDuration is what a setting of type time.Duration answers a value that is not one:
// people write "10 minutes", the flag package wants Go's notation.
var ErrDuration = errors.New("not a duration: use Go durations such as 10m, 1h30m")

// durationValue is a duration flag whose bad values are told the format.
type durationValue struct{ flag.Value }

func (d *durationValue) Set(s string) error {
	if err := d.Value.Set(s); err != nil {
		return ErrDuration
	}
	return nil
}

func (d *durationValue) String() string {
	if d == nil || d.Value == nil { // the flag package's zero-value probe
		return ""
	}
	return d.Value.String()
}

// Get returns the duration, as the wrapped flag.Getter does.
func (d *durationValue) Get() any { return d.Value.(flag.Getter).Get() }

// ExplainDurations makes every time.Duration flag of fs refuse a bad value with ErrDuration,
// whether it comes from the command line, the environment or the --config file.
func ExplainDurations(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok {
			if _, ok := g.Get().(time.Duration); ok {
				f.Value = &durationValue{f.Value}
			}
		}
	})
}
