package gatewayctl

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/sekgate/gateway/shared/snapshot"
)

// keygenCmd writes a new snapshot signing key pair: the control plane's
// --snapshot-signing-key-file and the nodes' --snapshot-public-key-file. It works offline.
func (a *app) keygenCmd() *cobra.Command {
	var privFile, pubFile string
	c := &cobra.Command{
		Use:   "keygen",
		Short: "Write a new ed25519 snapshot signing key pair (PEM) for the control plane and the nodes",
		Long: `keygen writes a new ed25519 key pair as PEM: the private key (PKCS #8, mode 0600) for the
control plane's --snapshot-signing-key-file and the public key for every node's
--snapshot-public-key-file. Existing files are never overwritten.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if privFile == "" || pubFile == "" {
				return errors.New("--private-key-file and --public-key-file are required")
			}
			_, key, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				return err
			}
			priv, pub, err := snapshot.MarshalKeyPair(key)
			if err != nil {
				return err
			}
			if err := writeNew(privFile, priv, 0o600); err != nil {
				return err
			}
			if err := writeNew(pubFile, pub, 0o644); err != nil {
				os.Remove(privFile)
				return err
			}
			fmt.Fprintf(a.out, "wrote %s (control plane) and %s (nodes)\n", privFile, pubFile)
			return nil
		},
	}
	c.Flags().StringVar(&privFile, "private-key-file", "", "where to write the private key")
	c.Flags().StringVar(&pubFile, "public-key-file", "", "where to write the public key")
	return c
}

// writeNew creates file with b, refusing to replace an existing file.
func writeNew(file string, b []byte, mode os.FileMode) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("keygen: %w", err)
	}
	return f.Close()
}
