// Shared settings of the client scripts: the gateway's base URL ({base_url}/v1), the
// key and the models come from the environment the Go test sets.
export function env(name) {
  const v = process.env[name];
  if (!v) {
    throw new Error(`${name} is not set`);
  }
  return v;
}

// report prints the script's result as one JSON line for the Go test to read, or the
// error and a non-zero exit status.
export async function report(fn) {
  try {
    console.log(JSON.stringify(await fn()));
  } catch (err) {
    console.error(err && err.stack ? err.stack : String(err));
    process.exit(1);
  }
}
