package signup

import (
	"errors"
	"fmt"
	"mime"
	"net/mail"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/sekgate/gateway/controlplane/adminapi"
)

// Field limits in characters (Unicode code points).
const (
	MaxName    = 200
	MaxEmail   = 254
	MaxUseCase = 4000
	MaxOther   = 200 // company, residency, volume
)

// MaxBody bounds the form body in bytes.
const MaxBody = 64 << 10

// Error codes carried in the error redirect that are not field names.
const (
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeInvalidForm          = "invalid_form"
	CodeTooLarge             = "too_large"
	CodeUnavailable          = "unavailable"
)

// Submission is a validated access request.
type Submission struct {
	Name      string
	Email     string
	Company   string
	Residency string
	Volume    string
	UseCase   string
	// Honeypot is true when the hidden website field was filled: a bot. The submission is
	// answered like a success and not stored.
	Honeypot bool
}

// FormError says why a body was refused. Code is a field name or one of the Code*
// constants; it becomes the error redirect's ?error= value.
type FormError struct {
	Code   string
	Reason string
}

func (e *FormError) Error() string { return "signup: " + e.Code + ": " + e.Reason }

// errNotForm wraps the reasons a body is not an urlencoded form.
var errNotForm = errors.New("not a form")

// ParseForm checks the content type and decodes and validates the form body. It returns a
// *FormError for every refusal.
func ParseForm(contentType string, body []byte) (Submission, error) {
	if err := checkContentType(contentType); err != nil {
		return Submission{}, &FormError{Code: CodeUnsupportedMediaType, Reason: err.Error()}
	}
	if len(body) > MaxBody {
		return Submission{}, &FormError{Code: CodeTooLarge, Reason: fmt.Sprintf("body over %d bytes", MaxBody)}
	}
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		return Submission{}, &FormError{Code: CodeInvalidForm, Reason: err.Error()}
	}
	get := func(k string) string { return strings.TrimSpace(vals.Get(k)) }
	s := Submission{
		Name:      get("name"),
		Email:     get("email"),
		Company:   get("company"),
		Residency: get("residency"),
		Volume:    get("volume"),
		UseCase:   get("use_case"),
		Honeypot:  get("website") != "",
	}
	if err := validText("name", s.Name, MaxName, true, false); err != nil {
		return Submission{}, err
	}
	if err := validEmail(s.Email); err != nil {
		return Submission{}, err
	}
	if get("consent") != "yes" {
		return Submission{}, &FormError{Code: "consent", Reason: `consent must be "yes"`}
	}
	for _, f := range []struct {
		name, val string
		max       int
		multiline bool
	}{{"company", s.Company, MaxOther, false}, {"residency", s.Residency, MaxOther, false}, {"volume", s.Volume, MaxOther, false},
		{"use_case", s.UseCase, MaxUseCase, true}} {
		if err := validText(f.name, f.val, f.max, false, f.multiline); err != nil {
			return Submission{}, err
		}
	}
	return s, nil
}

func checkContentType(ct string) error {
	if ct == "" {
		return fmt.Errorf("%w: no Content-Type", errNotForm)
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return fmt.Errorf("%w: %v", errNotForm, err)
	}
	if mt != "application/x-www-form-urlencoded" {
		return fmt.Errorf("%w: Content-Type %s", errNotForm, mt)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return fmt.Errorf("%w: charset %s", errNotForm, cs)
	}
	return nil
}

// validText checks one text field. Control characters are refused (they would reach an
// operator's terminal through gatewayctl or a log viewer): C0 controls, DEL, C1 controls
// and the bidirectional formatting characters that reorder displayed text. A multi-line
// field (use_case, a textarea) may hold tab, CR and LF.
func validText(field, v string, max int, required, multiline bool) error {
	switch {
	case required && v == "":
		return &FormError{Code: field, Reason: field + " is required"}
	case !utf8.ValidString(v):
		return &FormError{Code: field, Reason: field + " is not valid UTF-8"}
	case utf8.RuneCountInString(v) > max:
		return &FormError{Code: field, Reason: fmt.Sprintf("%s is longer than %d characters", field, max)}
	}
	for _, r := range v {
		if multiline && (r == '\t' || r == '\r' || r == '\n') {
			continue
		}
		if adminapi.UnsafeRune(r) {
			return &FormError{Code: field, Reason: fmt.Sprintf("%s contains the control character %U", field, r)}
		}
	}
	return nil
}

// validEmail accepts a plain address (no display name, no angle brackets, no comments)
// that net/mail parses back to exactly itself.
func validEmail(v string) error {
	if err := validText("email", v, MaxEmail, true, false); err != nil {
		return err
	}
	a, err := mail.ParseAddress(v)
	if err != nil || a.Name != "" || a.Address != v {
		return &FormError{Code: "email", Reason: "email is not a plain email address"}
	}
	local, domain, ok := strings.Cut(v, "@")
	if !ok || local == "" || domain == "" || strings.ContainsAny(v, " \t\r\n") {
		return &FormError{Code: "email", Reason: "email is not a plain email address"}
	}
	return nil
}
