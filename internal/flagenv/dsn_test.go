package flagenv

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// noPGEnvironment keeps the environment and ~/.pgpass out of pgconn.ParseConfig, so the
// password it reports is the one in the connection string.
func noPGEnvironment(t interface{ Setenv(k, v string) }, dir string) {
	for _, k := range []string{"PGPASSWORD", "PGHOST", "PGUSER", "PGDATABASE", "PGPORT", "PGSERVICE", "PGSSLMODE"} {
		t.Setenv(k, "")
	}
	t.Setenv("PGPASSFILE", filepath.Join(dir, "absent-pgpass"))
	t.Setenv("PGSERVICEFILE", filepath.Join(dir, "absent-service"))
}

func TestRedactDSN(t *testing.T) {
	noPGEnvironment(t, t.TempDir())
	tests := []struct {
		name, in, want string
		password       string // the password pgx reads from in ("" for none)
	}{
		{"empty", "", "", ""},
		{"URL user and password", "postgres://app:hunter2@db:5432/gw", "postgres://app:xxxxx@db:5432/gw", "hunter2"},
		{"postgresql scheme", "postgresql://app:hunter2@db/gw?sslmode=disable", "postgresql://app:xxxxx@db/gw?sslmode=disable", "hunter2"},
		{"URL escaped password", "postgres://app:p%40ss%2Fw@db/gw", "postgres://app:xxxxx@db/gw", "p@ss/w"},
		{"URL user only", "postgres://app@db/gw", "postgres://app@db/gw", ""},
		{"URL empty password", "postgres://app:@db/gw", "postgres://app:@db/gw", ""},
		{"URL no user", "postgres://db:5432/gw?sslmode=require", "postgres://db:5432/gw?sslmode=require", ""},
		{"URL password in query", "postgres://app@db/gw?sslmode=disable&password=hunter2&application_name=gw",
			"postgres://app@db/gw?sslmode=disable&password=xxxxx&application_name=gw", "hunter2"},
		{"URL both places", "postgres://app:first1@db/gw?password=second2", "postgres://app:xxxxx@db/gw?password=xxxxx", "second2"},
		{"URL escaped query key", "postgres://app@db/gw?pass%77ord=hunter2", "postgres://app@db/gw?pass%77ord=xxxxx", "hunter2"},
		{"URL '@' past a '?' ends the user information", "postgres://app:12?x@db/gw", "postgres://app:xxxxx@db/gw", "12?x"},
		{"URL several hosts", "postgres://app:hunter2@h1:5432,h2:5433/gw", "postgres://app:xxxxx@h1:5432,h2:5433/gw", "hunter2"},
		{"URL IPv6 host", "postgres://app:hunter2@[::1]:5432/gw", "postgres://app:xxxxx@[::1]:5432/gw", "hunter2"},
		{"URL socket directory", "postgres://app:hunter2@%2Fvar%2Frun%2Fpostgresql/gw", "postgres://app:xxxxx@%2Fvar%2Frun%2Fpostgresql/gw", "hunter2"},
		{"keywords", "host=db user=app password=hunter2 dbname=gw", "host=db user=app password=xxxxx dbname=gw", "hunter2"},
		{"keywords quoted password", "host=db password='a b c' dbname=gw", "host=db password=xxxxx dbname=gw", "a b c"},
		{"keywords quoted with escapes", `host=db password='it\'s \\ here' dbname=gw`, "host=db password=xxxxx dbname=gw", `it's \ here`},
		{"keywords escaped space", `host=db password=a\ b dbname=gw`, "host=db password=xxxxx dbname=gw", "a b"},
		{"keywords spaces around '='", "host = db  password =  hunter2\tdbname=gw ", "host = db  password =  xxxxx\tdbname=gw ", "hunter2"},
		{"keywords password first and last", "password=one1 host=db password=two2", "password=xxxxx host=db password=xxxxx", "two2"},
		{"keywords empty password takes the next word", "host=db password= dbname=gw", "host=db password= xxxxx", "dbname=gw"},
		{"keywords quoted empty password", "host=db password='' dbname=gw", "host=db password=xxxxx dbname=gw", ""},
		{"keywords no password", "host=db user=app dbname=gw sslmode=disable", "host=db user=app dbname=gw sslmode=disable", ""},
		{"keywords sslpassword", "host=db sslpassword=keypass1 dbname=gw", "host=db sslpassword=xxxxx dbname=gw", ""},
		{"unterminated quote", "host=db password='hunter2", Redacted, ""},
		{"not a DSN", "hunter2", Redacted, ""},
		{"other scheme", "mysql://app:hunter2@db/gw?password=x", Redacted, ""},
		{"keyword with a space", "host=db pass word=hunter2", Redacted, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := RedactDSN(tt.in)
			if got != tt.want {
				t.Fatalf("RedactDSN(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if tt.want == Redacted || tt.in == "" {
				return
			}
			checkAgainstPGX(t, tt.in, got, tt.password)
		})
	}
}

// checkAgainstPGX asserts that pgx reads password from in, and reads out as the same
// connection with no password or RedactedPassword.
func checkAgainstPGX(t *testing.T, in, out, password string) {
	t.Helper()
	orig, err := pgconn.ParseConfig(in)
	if err != nil {
		t.Fatalf("pgx rejects the input %q: %v", in, err)
	}
	if orig.Password != password {
		t.Fatalf("pgx reads password %q from %q, the table says %q", orig.Password, in, password)
	}
	red, err := pgconn.ParseConfig(out)
	if err != nil {
		t.Fatalf("pgx rejects the redacted %q: %v", out, err)
	}
	if red.Password != "" && red.Password != RedactedPassword {
		t.Errorf("pgx reads password %q from the redacted %q", red.Password, out)
	}
	if red.Host != orig.Host || red.Port != orig.Port || red.User != orig.User || red.Database != orig.Database {
		t.Errorf("redaction changed the connection: %s %d %s %s, was %s %d %s %s",
			red.Host, red.Port, red.User, red.Database, orig.Host, orig.Port, orig.User, orig.Database)
	}
}

// FuzzRedactDSN checks that whatever connection string pgx accepts, pgx reads no password
// but the mask from its redacted form.
func FuzzRedactDSN(f *testing.F) {
	noPGEnvironment(f, f.TempDir())
	for _, s := range []string{"postgres://a:b@h/d", "postgres://a:b?c@h/d?password=e", "host=h password='x y'",
		`password=a\ b host=h`, "password= host=h", "postgresql://h/d?sslpassword=k&password=p"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := RedactDSN(s)
		if strings.Contains(out, "\x00") || out == Redacted {
			return
		}
		red, err := pgconn.ParseConfig(out)
		if err != nil {
			if _, origErr := pgconn.ParseConfig(s); origErr == nil {
				t.Fatalf("pgx accepts %q but not its redacted form %q: %v", s, out, err)
			}
			return
		}
		if red.Password != "" && red.Password != RedactedPassword {
			t.Fatalf("pgx reads password %q from %q, the redacted form of %q", red.Password, out, s)
		}
	})
}

func TestDSNValue(t *testing.T) {
	var d DSN
	if d.String() != "" {
		t.Fatalf("empty DSN prints %q", d.String())
	}
	in := "postgres://app:hunter2@db/gw"
	if err := d.Set(in); err != nil {
		t.Fatal(err)
	}
	if d.Reveal() != in {
		t.Fatalf("Reveal %q", d.Reveal())
	}
	for _, verb := range []string{"%v", "%s", "%q", "%#v", "%+v", "%x", "%d"} {
		if got := fmt.Sprintf(verb, d); strings.Contains(got, "hunter2") {
			t.Errorf("%s prints %q", verb, got)
		}
	}
	if got := d.LogValue().String(); got != "postgres://app:xxxxx@db/gw" {
		t.Errorf("LogValue %q", got)
	}
}
