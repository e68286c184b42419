package flagenv

import (
	"errors"
	"flag"
	"fmt"
	"reflect"
	"strconv"
	"time"
)

// A settings struct declares each setting once, as a field with tags:
//
//	HeaderTimeout time.Duration `flag:"header-timeout" default:"10s" help:"longest time to receive a request's headers"`
//
// Bind registers the fields as flags (and so as environment variables, --config keys and
// lines of docs/configuration.md, all derived from the flags); Defaults gives a struct
// built in code the same defaults. Fields without a flag tag are skipped, except structs
// (groups of settings), which are walked. A field with a default tag and no flag tag is a
// default of code only (Defaults), not a setting. A field's type is string, bool, int, int64,
// float64, time.Duration, or a type whose pointer is a flag.Value (Secret, DSN).

var flagValue = reflect.TypeFor[flag.Value]()

// Bind registers a flag on fs for every tagged field of the struct v points to, with its
// default set.
func Bind(fs *flag.FlagSet, v any) error {
	return walk(v, func(f reflect.Value, name, def, help string) error {
		if name == "" {
			return nil // a default without a flag: Defaults only
		}
		if err := setDefault(f, def); err != nil {
			return fmt.Errorf("flagenv: --%s default %q: %w", name, def, err)
		}
		p := f.Addr().Interface()
		switch p := p.(type) {
		case flag.Value:
			fs.Var(p, name, help)
		case *string:
			fs.StringVar(p, name, *p, help)
		case *bool:
			fs.BoolVar(p, name, *p, help)
		case *int:
			fs.IntVar(p, name, *p, help)
		case *int64:
			fs.Int64Var(p, name, *p, help)
		case *float64:
			fs.Float64Var(p, name, *p, help)
		case *time.Duration:
			fs.DurationVar(p, name, *p, help)
		default:
			return fmt.Errorf("flagenv: --%s: unsupported type %s", name, f.Type())
		}
		return nil
	})
}

// Defaults sets every tagged field of the struct v points to that holds its zero value to
// its default (a negative number, meaning off, stays).
func Defaults(v any) error {
	return walk(v, func(f reflect.Value, name, def, _ string) error {
		if def == "" || !f.IsZero() {
			return nil
		}
		if err := setDefault(f, def); err != nil {
			return fmt.Errorf("flagenv: --%s default %q: %w", name, def, err)
		}
		return nil
	})
}

// MustDefaults is Defaults for settings structs whose tags are checked by their tests.
func MustDefaults(v any) {
	if err := Defaults(v); err != nil {
		panic(err)
	}
}

func walk(v any, fn func(f reflect.Value, name, def, help string) error) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return errors.New("flagenv: settings must be a pointer to a struct")
	}
	return walkStruct(rv.Elem(), fn)
}

func walkStruct(s reflect.Value, fn func(f reflect.Value, name, def, help string) error) error {
	t := s.Type()
	for i := range t.NumField() {
		sf, f := t.Field(i), s.Field(i)
		name, tagged := sf.Tag.Lookup("flag")
		_, hasDefault := sf.Tag.Lookup("default")
		switch {
		case (tagged || hasDefault) && !sf.IsExported():
			return fmt.Errorf("flagenv: --%s: field %s is not exported", name, sf.Name)
		case tagged || hasDefault:
			if err := fn(f, name, sf.Tag.Get("default"), sf.Tag.Get("help")); err != nil {
				return err
			}
		case sf.Type.Kind() == reflect.Struct && sf.IsExported() && !reflect.PointerTo(sf.Type).Implements(flagValue):
			if err := walkStruct(f, fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// setDefault sets f from its default's text ("" leaves it).
func setDefault(f reflect.Value, def string) error {
	if def == "" {
		return nil
	}
	if fv, ok := f.Addr().Interface().(flag.Value); ok {
		return fv.Set(def)
	}
	switch p := f.Addr().Interface().(type) {
	case *string:
		*p = def
	case *bool:
		b, err := strconv.ParseBool(def)
		*p = b
		return err
	case *int:
		n, err := strconv.Atoi(def)
		*p = n
		return err
	case *int64:
		n, err := strconv.ParseInt(def, 10, 64)
		*p = n
		return err
	case *float64:
		x, err := strconv.ParseFloat(def, 64)
		*p = x
		return err
	case *time.Duration:
		d, err := time.ParseDuration(def)
		*p = d
		return err
	default:
		return fmt.Errorf("unsupported type %s", f.Type())
	}
	return nil
}
