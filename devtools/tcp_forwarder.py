"""A TCP forwarder: listens on one address, for each of several ports, and pipes every
connection to the same port on another address.

The worker hosts of `netns_hosts` use two per host: one inside the namespace (its 127.0.0.1
to the host side of its veth), one outside (the veth address to this machine's 127.0.0.1),
so that processes in the namespace reach PostgreSQL, RabbitMQ, Redis and the loopback
receivers at their usual 127.0.0.1 addresses, and every byte crosses the veth: cutting the
veth cuts the host off.

    python -m devtools.tcp_forwarder --listen 10.251.0.1 --to 127.0.0.1 --ports 5432,5672,6379
"""

import argparse
import asyncio
import contextlib
import sys

CHUNK = 64 * 1024
READY = "forwarding"  # what it prints once it listens on every port


def command(listen: str, target: str, ports: list[int]) -> list[str]:
    """The command line of a forwarder from `listen` to `target` on each of `ports`."""
    return [sys.executable, "-m", "devtools.tcp_forwarder", "--listen", listen, "--to", target,
            "--ports", ",".join(map(str, ports))]


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    with contextlib.suppress(ConnectionError, OSError, RuntimeError):
        writer.write_eof()  # the end of one direction, passed on; the other may still be talking


async def _forward(client_reader, client_writer, target: str, port: int) -> None:
    try:
        server_reader, server_writer = await asyncio.open_connection(target, port)
    except OSError:
        client_writer.close()  # as a refused connection: the client sees it at once
        return
    await asyncio.gather(_pipe(client_reader, server_writer), _pipe(server_reader, client_writer))
    client_writer.close()
    server_writer.close()


async def serve(listen: str, target: str, ports: list[int]) -> None:
    servers = []
    for port in ports:
        def handle(reader, writer, port=port):
            return _forward(reader, writer, target, port)

        servers.append(await asyncio.start_server(handle, listen, port, reuse_address=True, backlog=512))
    print(f"{READY} {listen} -> {target} ports {','.join(map(str, ports))}", flush=True)
    await asyncio.gather(*(server.serve_forever() for server in servers))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", required=True)
    parser.add_argument("--to", required=True, dest="target")
    parser.add_argument("--ports", required=True, help="comma separated")
    args = parser.parse_args()
    asyncio.run(serve(args.listen, args.target, [int(p) for p in args.ports.split(",")]))


if __name__ == "__main__":
    main()
