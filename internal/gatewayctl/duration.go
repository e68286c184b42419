package gatewayctl

import (
	"errors"
	"time"
)

// durationFlag is a time.Duration flag whose bad values are told the format: people write
// "10 minutes", Go's notation is 10m.
type durationFlag time.Duration

func (d *durationFlag) String() string { return time.Duration(*d).String() }
func (d *durationFlag) Type() string   { return "duration" }

func (d *durationFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration: use Go durations such as 10m, 1h30m")
	}
	*d = durationFlag(v)
	return nil
}
