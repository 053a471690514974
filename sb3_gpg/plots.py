"""``python -m sb3_gpg.plots ...``: rl_zoo3's plots with GPG registered (see sb3_gpg.zoo)."""

from sb3_gpg.zoo import run

if __name__ == "__main__":
    run("plots", program="python -m sb3_gpg.plots")
