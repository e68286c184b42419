package bench
import ("os";"testing")
func TestZZBody(t *testing.T){ if os.Getenv("PROF_HOLD")!=""{return}; os.WriteFile("/tmp/prof/body1k.json", ChatBody(1024),0o644); os.WriteFile("/tmp/prof/body64k.json", ChatBody(65536),0o644)}
