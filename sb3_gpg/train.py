"""``python -m sb3_gpg.train ...``: rl_zoo3's train with GPG registered (see sb3_gpg.zoo)."""

from sb3_gpg.zoo import run

if __name__ == "__main__":
    run("train", program="python -m sb3_gpg.train")
