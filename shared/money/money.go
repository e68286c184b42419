// Package money holds the exact arithmetic both planes use for SEK amounts.
//
// Amounts are integer micro-SEK (1 SEK = 100 öre = 1,000,000 micro-SEK). Prices are
// integer öre per million tokens. No floating point is used anywhere in this package.
package money

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// MicroPerSEK is the number of micro-SEK in one SEK.
const MicroPerSEK = 1_000_000

// MicroPerOre is the number of micro-SEK in one öre.
const MicroPerOre = 10_000

// ErrOverflow is returned when an amount does not fit in an int64 of micro-SEK.
var ErrOverflow = errors.New("money: amount overflows int64 micro-SEK")

// ErrSyntax is returned by ParseSEK for a string that is not an exact decimal amount.
var ErrSyntax = errors.New("money: invalid decimal SEK amount")

// TokenPrice returns the price in micro-SEK of tokens at orePerMillion öre per million
// tokens, rounded up to the next whole micro-SEK:
//
//	ceil(tokens * orePerMillion / 100)
//
// (one öre per million tokens is 1/100 micro-SEK per token). Negative inputs count as 0.
// The result saturates at math.MaxInt64 rather than wrapping.
func TokenPrice(tokens, orePerMillion int64) int64 {
	if tokens <= 0 || orePerMillion <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(tokens), uint64(orePerMillion))
	if hi >= 100 { // quotient would not fit in 64 bits
		return math.MaxInt64
	}
	q, r := bits.Div64(hi, lo, 100)
	if r != 0 {
		q++
	}
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// Price is the price of one request: input and output tokens at their own rates, each
// rounded up separately, then added (saturating).
func Price(inputTokens, outputTokens, inputOrePerMillion, outputOrePerMillion int64) int64 {
	total, _ := PriceParts(inputTokens, outputTokens, inputOrePerMillion, outputOrePerMillion)
	return total
}

// PriceParts is Price with its input side as well (what metrics count as prompt spend).
func PriceParts(inputTokens, outputTokens, inputOrePerMillion, outputOrePerMillion int64) (total, input int64) {
	input = TokenPrice(inputTokens, inputOrePerMillion)
	return AddSat(input, TokenPrice(outputTokens, outputOrePerMillion)), input
}

// AddSat adds two amounts, saturating at the int64 bounds instead of wrapping.
func AddSat(a, b int64) int64 {
	s := a + b
	if a > 0 && b > 0 && s < 0 {
		return math.MaxInt64
	}
	if a < 0 && b < 0 && s >= 0 {
		return math.MinInt64
	}
	return s
}

// SEKToMicro converts whole SEK to micro-SEK.
func SEKToMicro(sek int64) (int64, error) {
	if sek > math.MaxInt64/MicroPerSEK || sek < math.MinInt64/MicroPerSEK {
		return 0, ErrOverflow
	}
	return sek * MicroPerSEK, nil
}

// OreToMicro converts öre to micro-SEK.
func OreToMicro(ore int64) (int64, error) {
	if ore > math.MaxInt64/MicroPerOre || ore < math.MinInt64/MicroPerOre {
		return 0, ErrOverflow
	}
	return ore * MicroPerOre, nil
}

// FormatSEK renders micro-SEK as an exact decimal SEK string: at least two decimals,
// at most six, trailing zeros beyond the second trimmed. Examples: 1500000 -> "1.50",
// 1234 -> "0.001234", -2500000 -> "-2.50".
func FormatSEK(micro int64) string {
	neg := micro < 0
	var u uint64
	if neg {
		u = uint64(-(micro + 1)) + 1 // safe for MinInt64
	} else {
		u = uint64(micro)
	}
	whole := u / MicroPerSEK
	frac := u % MicroPerSEK
	fs := fmt.Sprintf("%06d", frac)
	fs = strings.TrimRight(fs, "0")
	for len(fs) < 2 {
		fs += "0"
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(strconv.FormatUint(whole, 10))
	b.WriteByte('.')
	b.WriteString(fs)
	return b.String()
}

// ParseSEK parses an exact decimal SEK string ("12", "-0.5", "3.141592") into micro-SEK.
// More than six decimals, exponents, spaces and signs other than a leading '-' are refused.
func ParseSEK(s string) (int64, error) {
	if s == "" {
		return 0, ErrSyntax
	}
	neg := false
	if s[0] == '-' {
		neg = true
		s = s[1:]
	}
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" || (hasDot && (frac == "" || len(frac) > 6)) {
		return 0, ErrSyntax
	}
	for _, part := range []string{whole, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return 0, ErrSyntax
			}
		}
	}
	w, err := strconv.ParseUint(whole, 10, 64)
	if err != nil {
		return 0, ErrOverflow
	}
	var f uint64
	if frac != "" {
		f, _ = strconv.ParseUint(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
	}
	hi, total := bits.Mul64(w, MicroPerSEK)
	total, carry := bits.Add64(total, f, 0)
	if hi != 0 || carry != 0 {
		return 0, ErrOverflow
	}
	if neg {
		if total > uint64(math.MaxInt64)+1 {
			return 0, ErrOverflow
		}
		return int64(-total), nil
	}
	if total > math.MaxInt64 {
		return 0, ErrOverflow
	}
	return int64(total), nil
}
