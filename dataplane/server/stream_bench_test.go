package server

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
)

// BenchmarkStreamServed serves streamed chat requests end to end over loopback TCP, one
// keep-alive client connection, from the edge to an in-process upstream (net/http, whose
// own cost is in every figure) and back: the relay, the start entry, the record, the
// upstream connection's reuse.
func BenchmarkStreamServed(b *testing.B) {
	g := startGateway(b)
	body := `{"model":"llama8b","messages":[{"role":"user","content":"Hej"}],"stream":true}`
	host := g.URL[len("http://"):]
	req := []byte("POST /v1/chat/completions HTTP/1.1\r\nHost: " + host + "\r\nAuthorization: Bearer " + g.Keys.SE +
		"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
	conn, err := net.Dial("tcp", host)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := conn.Write(req); err != nil {
			b.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || n == 0 {
			b.Fatalf("status %d, %d bytes", resp.StatusCode, n)
		}
	}
}
