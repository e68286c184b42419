package server

// This file is the edge's side of the servers' dialects (dataplane/dialect): the client's
// answer to an error a server reported, in a body or inside its stream, and the end of a
// stream that did not complete.
