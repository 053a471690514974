"""``python -m sb3_gpg.record_training ...``: rl_zoo3's record_training with GPG registered (see sb3_gpg.zoo)."""

from sb3_gpg.zoo import run

if __name__ == "__main__":
    run("record_training", program="python -m sb3_gpg.record_training")
