package money

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func TestTokenPrice(t *testing.T) {
	tests := []struct {
		name          string
		tokens, price int64
		want          int64
	}{
		{"zero tokens", 0, 1000, 0},
		{"zero price", 1000, 0, 0},
		{"exact", 1_000_000, 100, 1_000_000}, // 1 SEK per million at 100 öre
		{"round up", 1, 1, 1},                // 0.01 micro-SEK rounds to 1
		{"round up 2", 101, 1, 2},
		{"negative tokens", -5, 100, 0},
		{"saturates", math.MaxInt64, math.MaxInt64, math.MaxInt64},
		{"typical", 1234, 25_000, 308_500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TokenPrice(tt.tokens, tt.price); got != tt.want {
				t.Fatalf("TokenPrice(%d,%d)=%d want %d", tt.tokens, tt.price, got, tt.want)
			}
		})
	}
}

// TestTokenPriceProperty compares against big-integer arithmetic.
func TestTokenPriceProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100_000; i++ {
		tok := r.Int64N(1 << 36)
		ore := r.Int64N(1 << 26)
		want := new(big.Int).Mul(big.NewInt(tok), big.NewInt(ore))
		q, m := new(big.Int).QuoRem(want, big.NewInt(100), new(big.Int))
		if m.Sign() != 0 {
			q.Add(q, big.NewInt(1))
		}
		if got := TokenPrice(tok, ore); got != q.Int64() {
			t.Fatalf("TokenPrice(%d,%d)=%d want %s", tok, ore, got, q)
		}
	}
}

func TestFormatParseSEK(t *testing.T) {
	tests := []struct {
		micro int64
		s     string
	}{
		{0, "0.00"},
		{1, "0.000001"},
		{1_500_000, "1.50"},
		{-2_500_000, "-2.50"},
		{-1, "-0.000001"},
		{123_456_789, "123.456789"},
		{100_000_000, "100.00"},
		{math.MaxInt64, "9223372036854.775807"},
		{math.MinInt64, "-9223372036854.775808"},
	}
	for _, tt := range tests {
		if got := FormatSEK(tt.micro); got != tt.s {
			t.Errorf("FormatSEK(%d)=%q want %q", tt.micro, got, tt.s)
		}
		got, err := ParseSEK(tt.s)
		if err != nil || got != tt.micro {
			t.Errorf("ParseSEK(%q)=%d,%v want %d", tt.s, got, err, tt.micro)
		}
	}
}

func TestParseSEKRejects(t *testing.T) {
	for _, s := range []string{"", "-", ".5", "1.", "1.1234567", "1e3", " 1", "+1", "1,5", "abc", "99999999999999999999", "9223372036854.775808"} {
		if _, err := ParseSEK(s); err == nil {
			t.Errorf("ParseSEK(%q) accepted", s)
		}
	}
}

func TestFormatParseRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 100_000; i++ {
		v := int64(r.Uint64())
		got, err := ParseSEK(FormatSEK(v))
		if err != nil || got != v {
			t.Fatalf("round trip %d: %d %v", v, got, err)
		}
	}
}

func TestAddSat(t *testing.T) {
	if AddSat(math.MaxInt64, 1) != math.MaxInt64 || AddSat(math.MinInt64, -1) != math.MinInt64 || AddSat(2, -3) != -1 {
		t.Fatal("AddSat wrong")
	}
}

func FuzzParseSEK(f *testing.F) {
	for _, s := range []string{"1", "-0.5", "12.345678", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseSEK(s)
		if err != nil {
			return
		}
		if back, err := ParseSEK(FormatSEK(v)); err != nil || back != v {
			t.Fatalf("%q -> %d -> %q -> %d %v", s, v, FormatSEK(v), back, err)
		}
	})
}
