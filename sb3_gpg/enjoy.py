"""``python -m sb3_gpg.enjoy ...``: rl_zoo3's enjoy with GPG registered (see sb3_gpg.zoo)."""

from sb3_gpg.zoo import run

if __name__ == "__main__":
    run("enjoy", program="python -m sb3_gpg.enjoy")
