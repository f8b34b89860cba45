from conftest import Env


def test_append_read_verify_roundtrip(env: Env) -> None:
    first = env.run(
        "log", "append", "--agent", "ella", "--channel", "build", "--type", "note", "--summary", "CI is green"
    ).stdout.strip()
    unread = env.run("log", "read", "--agent", "lyra", "--json").json()
    assert [e["id"] for e in unread] == [first]
    assert env.run("log", "read", "--agent", "lyra", "--json").json() == []
    assert env.run("verify").returncode == 0
