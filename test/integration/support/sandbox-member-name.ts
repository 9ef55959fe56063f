// The name a sandbox member's certificate holds for the address it answers on (mysql-sandbox.ts's
// address(): member 0 on 127.0.0.1, member N on 127.0.0.1(10+N)), for the clients that run in the
// sandbox's network and verify a member by name as the controller does. Its own file: those clients
// need nothing else of the sandbox.
export function sandboxMemberName(address: string): string {
  const last = Number(address.split('.').pop());
  return `shop-${address === '127.0.0.1' ? 0 : last - 10}.shop-headless`;
}
