# One image for every service of the narrator; compose picks the command.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
# FriBiDi: the pictures' right-to-left text (Pillow's bundled Raqm loads it from the system)
RUN apt-get update && apt-get install -y --no-install-recommends libfribidi0 && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md ./
COPY services ./services
COPY shared ./shared
COPY avalon ./avalon
RUN pip install --no-cache-dir .
RUN useradd --create-home avalon
USER avalon
CMD ["avalon", "engine"]
