package config

import (
	"encoding"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// A setting is declared once, as a field of Config with tags:
//
//	env      the variable (BOXOFFICE_… unless the name is a standard one)
//	old      the name it had before, still read, with a warning
//	default  the value when the variable is unset or empty
//	doc      one line for docs/configuration.md
//	min, max bounds of a number (or of a duration)
//	enum     the values allowed, separated by |
//	secret   "true": may come from the file named by <env>_FILE instead
//	section  starts a new table in docs/configuration.md
//
// A field without env is not read from the environment (dev sets it, or
// it is derived). Cross-setting rules are in Validate.

// setting is one declared field.
type setting struct {
	field   reflect.StructField
	env     string
	old     string
	def     string
	doc     string
	min     string
	max     string
	enum    []string
	secret  bool
	section string
}

// settings lists Config's declared fields in order.
func settings() []setting {
	t := reflect.TypeFor[Config]()
	var out []setting
	for i := range t.NumField() {
		f := t.Field(i)
		name, ok := f.Tag.Lookup("env")
		if !ok {
			continue
		}
		s := setting{field: f, env: name, old: f.Tag.Get("old"), def: f.Tag.Get("default"), doc: f.Tag.Get("doc"),
			min: f.Tag.Get("min"), max: f.Tag.Get("max"), secret: f.Tag.Get("secret") == "true", section: f.Tag.Get("section")}
		if e := f.Tag.Get("enum"); e != "" {
			s.enum = strings.Split(e, "|")
		}
		out = append(out, s)
	}
	return out
}

// env is what load reads the environment through.
type env struct {
	getenv   func(string) string
	readFile func(string) ([]byte, error)
}

// value returns the setting's raw value and where it came from (for
// messages), and a warning when an old name gave it.
func (e env) value(s setting) (raw, from, warning string, err error) {
	if v := e.getenv(s.env); v != "" {
		return v, s.env, "", nil
	}
	if s.secret {
		if path := e.getenv(s.env + "_FILE"); path != "" {
			b, err := e.readFile(path)
			if err != nil {
				return "", s.env + "_FILE", "", fmt.Errorf("%s_FILE: %w", s.env, err)
			}
			return strings.TrimRight(string(b), "\r\n"), s.env + "_FILE", "", nil
		}
	}
	if s.old != "" {
		if v := e.getenv(s.old); v != "" {
			return v, s.old, fmt.Sprintf("%s is the old name of %s, read for now: rename it", s.old, s.env), nil
		}
	}
	return s.def, "default", "", nil
}

var (
	durationType  = reflect.TypeFor[time.Duration]()
	unmarshalType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// set parses raw into the field dst.
func (s setting) set(dst reflect.Value, raw string) error {
	if len(s.enum) > 0 && !contains(s.enum, raw) {
		return fmt.Errorf("%q: want %s", raw, strings.Join(s.enum, ", "))
	}
	if dst.Kind() == reflect.Pointer && dst.Type().Implements(unmarshalType) {
		if raw == "" {
			return nil
		}
		v := reflect.New(dst.Type().Elem())
		if err := v.Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(raw)); err != nil {
			return err
		}
		dst.Set(v)
		return nil
	}
	if dst.CanAddr() && dst.Addr().Type().Implements(unmarshalType) {
		return dst.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(raw))
	}
	switch {
	case dst.Type() == durationType:
		if raw == "" {
			return nil
		}
		d, err := time.ParseDuration(raw)
		if err != nil {
			return errors.New("not a duration (300ms, 5s, 2m, 1h)")
		}
		dst.SetInt(int64(d))
		return s.bounds(float64(d), func(b string) (float64, error) {
			d, err := time.ParseDuration(b)
			return float64(d), err
		})
	case dst.Kind() == reflect.String:
		dst.SetString(raw)
	case dst.Kind() == reflect.Int:
		if raw == "" {
			return nil
		}
		n, err := strconv.Atoi(raw)
		if err != nil {
			return errors.New("not a whole number")
		}
		dst.SetInt(int64(n))
		return s.bounds(float64(n), func(b string) (float64, error) { return strconv.ParseFloat(b, 64) })
	case dst.Kind() == reflect.Float64:
		if raw == "" {
			return nil
		}
		f, err := strconv.ParseFloat(raw, 64)
		if err != nil {
			return errors.New("not a number")
		}
		dst.SetFloat(f)
		return s.bounds(f, func(b string) (float64, error) { return strconv.ParseFloat(b, 64) })
	case dst.Kind() == reflect.Bool:
		if raw == "" {
			return nil
		}
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return errors.New("want true or false (1 or 0)")
		}
		dst.SetBool(b)
	case dst.Kind() == reflect.Slice && dst.Type().Elem().Kind() == reflect.String:
		var list []string
		for part := range strings.SplitSeq(raw, ",") {
			if part = strings.TrimSpace(part); part != "" {
				list = append(list, part)
			}
		}
		dst.Set(reflect.ValueOf(list).Convert(dst.Type()))
	default:
		panic(fmt.Sprintf("config: %s has a type settings cannot read", s.field.Name)) // a declaration bug, caught by the tests
	}
	return nil
}

// bounds checks v against min and max.
func (s setting) bounds(v float64, parse func(string) (float64, error)) error {
	if s.min != "" {
		if lo, err := parse(s.min); err == nil && v < lo {
			return fmt.Errorf("must be at least %s", s.min)
		}
	}
	if s.max != "" {
		if hi, err := parse(s.max); err == nil && v > hi {
			return fmt.Errorf("must be at most %s", s.max)
		}
	}
	return nil
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// read fills c from the environment, returning the warnings of old names
// and every error at once.
func read(c *Config, e env) ([]string, error) {
	v := reflect.ValueOf(c).Elem()
	var warnings []string
	var errs []error
	for _, s := range settings() {
		raw, from, warning, err := e.value(s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if warning != "" {
			warnings = append(warnings, warning)
		}
		if err := s.set(v.FieldByIndex(s.field.Index), raw); err != nil {
			name := s.env
			if from != s.env && from != "default" {
				name = from
			}
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	return warnings, errors.Join(errs...)
}

// osEnv is the process's environment.
func osEnv() env { return env{getenv: os.Getenv, readFile: os.ReadFile} }
